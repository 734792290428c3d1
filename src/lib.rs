//! The `godwit` binary's library half: role wiring, configuration, the
//! admin listener and CLI, and the regions `godwit demo` starts. The load
//! generator and the demo themselves are `godwit-tools`. `main.rs` only
//! parses the command line; integration tests start servers in-process
//! through `roles::start_server`.

pub mod admin;
pub mod config;
pub mod credentials;
pub mod demo_regions;
pub mod listen;
pub mod roles;
pub mod routing;
