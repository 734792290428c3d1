//! `MetaClient`: `MetaApi` over HTTP (written by the meta work).
