//! Edges that read objects from the outside world.
