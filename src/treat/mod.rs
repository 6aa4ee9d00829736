//! Treatments turn findings into [`crate::edit::Edit`]s. They never write
//! files: the format module applies edits to a copy.

pub mod compact;
pub mod repair;
