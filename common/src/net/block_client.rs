//! `BlockClient`: `BlockStore` over HTTP (written by the datanode work).
