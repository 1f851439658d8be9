//! The one parser (placeholder; filled in by the parser work).
