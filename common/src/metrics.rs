//! Registering a metric in the process's default Prometheus registry.

/// Registers `c` in the default registry and returns it.
///
/// A name registered already (two copies of a role in one test process,
/// each with its own static) is not an error: the metric still counts, it
/// is just exported once.
pub fn register<C: prometheus::core::Collector + Clone + 'static>(c: C) -> C {
    let _ = prometheus::default_registry().register(Box::new(c.clone()));
    c
}
