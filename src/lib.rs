//! The `godwit` binary's library half: role wiring, configuration, the
//! admin listener and CLI, the load generator and the replication demo.
//! `main.rs` only parses the command line; integration tests start servers
//! in-process through `roles::start_server`.

pub mod admin;
pub mod bench;
pub mod config;
pub mod credentials;
pub mod demo;
pub mod listen;
pub mod roles;
pub mod routing;
