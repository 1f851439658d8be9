//! The operator's commands beside `serve`: `pier proxy-status` (what each connected proxy runs, from a
//! running pier's admin API). They read pier's outputs and never change what is served.

pub mod admin_client;
pub mod proxy_status;
