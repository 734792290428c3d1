//! The admin listener (`/health`, `/metrics`, the admin API) and the
//! `godwit admin` client that talks to it; `/ui`, the dashboard (`ui/`).

pub mod cli;
pub mod cluster;
mod report;
pub mod server;
pub mod ui;
mod verify;
