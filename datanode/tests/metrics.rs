//! The backend gauge and the counters, in the default registry. One test in
//! this binary (not in `it`, the crate's other suites), so no other
//! datanode flips the gauge or adds bytes meanwhile.

mod common;

use common::*;
use godwit_common::BlockStore;

fn value(name: &str, label: Option<(&str, &str)>) -> Option<f64> {
    for fam in prometheus::default_registry().gather() {
        if fam.name() != name {
            continue;
        }
        for m in fam.get_metric() {
            let ok = match label {
                None => true,
                Some((k, v)) => m
                    .get_label()
                    .iter()
                    .any(|l| l.name() == k && l.value() == v),
            };
            if ok {
                return Some(
                    if fam.get_field_type() == prometheus::proto::MetricType::GAUGE {
                        m.get_gauge().get_value()
                    } else {
                        m.get_counter().get_value()
                    },
                );
            }
        }
    }
    None
}

#[tokio::test]
async fn backend_gauge_and_byte_counters() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let pool = open_with(d1.path(), true, false).await;
    assert_eq!(value("godwit_datanode_direct_io", None), Some(0.0));
    assert_eq!(
        value(
            "godwit_datanode_io_backend",
            Some(("backend", "threadpool"))
        ),
        Some(1.0)
    );
    assert_eq!(
        value("godwit_datanode_io_backend", Some(("backend", "io_uring"))),
        Some(0.0)
    );
    // Opening a second datanode in the same process must not panic on
    // re-registration; the gauge follows the newest.
    let dn = open(d2.path(), false).await;
    assert_eq!(
        value("godwit_datanode_direct_io", None),
        Some(if dn.direct_io() { 1.0 } else { 0.0 })
    );
    let active = dn.io_backend();
    eprintln!("default datanode backend on this machine: {active}");
    assert_eq!(
        value("godwit_datanode_io_backend", Some(("backend", active))),
        Some(1.0)
    );

    let w0 = value("godwit_datanode_bytes_written_total", None).unwrap();
    let r0 = value("godwit_datanode_bytes_read_total", None).unwrap();
    assert!(value("godwit_datanode_blocks_gc_total", None).is_some());
    let id = id(1);
    dn.put_block(&id, &wtok(&id), body(&data(100_000, 1), 4096))
        .await
        .unwrap();
    collect(dn.get_block(&id, &rtok(&id), 10, Some(1000)).await.unwrap())
        .await
        .unwrap();
    assert_eq!(
        value("godwit_datanode_bytes_written_total", None).unwrap() - w0,
        100_000.0
    );
    assert_eq!(
        value("godwit_datanode_bytes_read_total", None).unwrap() - r0,
        1000.0
    );
    drop(pool);
}
