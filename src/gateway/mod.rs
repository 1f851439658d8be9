//! Model → IR + status.
