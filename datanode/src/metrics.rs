//! Prometheus metrics of the datanode, registered once per process in
//! `prometheus::default_registry()` (several datanodes in one process, as in
//! tests, share them).

use std::sync::LazyLock;

use prometheus::{IntCounter, IntGauge, IntGaugeVec, Opts};

use crate::io::Backend;

use godwit_common::metrics::register;

/// 1 when block files are written with `O_DIRECT`.
pub static DIRECT_IO: LazyLock<IntGauge> = LazyLock::new(|| {
    register(
        IntGauge::new(
            "godwit_datanode_direct_io",
            "Block files are written with O_DIRECT (1) or through the page cache (0)",
        )
        .expect("valid metric name"),
    )
});

/// 1 for the I/O backend in use, 0 for the other.
pub static IO_BACKEND: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    register(
        IntGaugeVec::new(
            Opts::new(
                "godwit_datanode_io_backend",
                "Datanode disk I/O backend in use (1 = active)",
            ),
            &["backend"],
        )
        .expect("valid metric"),
    )
});

/// Folder fsyncs run after block renames; fewer than blocks written when
/// concurrent renames into one folder share them (`dirsync`).
pub static FOLDER_FSYNCS: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_datanode_folder_fsyncs_total",
            "Folder fsyncs that made block renames durable (one may serve several renames)",
        )
        .expect("valid metric"),
    )
});

pub static BYTES_WRITTEN: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_datanode_bytes_written_total",
            "Block data bytes written durably",
        )
        .expect("valid metric"),
    )
});

pub static BYTES_READ: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_datanode_bytes_read_total",
            "Block data bytes read and verified",
        )
        .expect("valid metric"),
    )
});

pub static BLOCKS_GC: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_datanode_blocks_gc_total",
            "Unreferenced blocks deleted by GC",
        )
        .expect("valid metric"),
    )
});

pub static SCRUB_BYTES: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_datanode_scrub_bytes_total",
            "Block bytes re-verified by the scrubber",
        )
        .expect("valid metric"),
    )
});

pub static SCRUB_CORRUPT: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_datanode_scrub_corrupt_total",
            "Block copies the scrubber found corrupt (reported to meta)",
        )
        .expect("valid metric"),
    )
});

pub static SCRUB_PASSES: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_datanode_scrub_passes_total",
            "Completed scrubber passes over every block",
        )
        .expect("valid metric"),
    )
});

/// Marks `active` as the backend in use. With several datanodes in one
/// process the last one opened wins.
pub fn set_backend(active: Backend) {
    for b in [Backend::IoUring, Backend::ThreadPool] {
        IO_BACKEND
            .with_label_values(&[b.as_str()])
            .set(i64::from(b == active));
    }
    // Touch the counters so they are exported (as 0) from the start.
    LazyLock::force(&BYTES_WRITTEN);
    LazyLock::force(&BYTES_READ);
    LazyLock::force(&BLOCKS_GC);
    LazyLock::force(&SCRUB_BYTES);
    LazyLock::force(&SCRUB_CORRUPT);
    LazyLock::force(&SCRUB_PASSES);
}
