//! session-doctor: load stored AI coding-agent sessions, measure them,
//! diagnose known faults and write repaired copies. Originals are opened
//! read-only and never written.
//!
//! Data flows one way: source ([`formats`]) -> [`model`] -> findings
//! ([`diagnose`]) and treatments ([`treat`]) -> writer or [`report`].

#![deny(clippy::string_slice)]

pub mod budget;
pub mod cli;
mod commands;
pub mod config;
pub mod diagnose;
pub mod edit;
pub mod error;
pub mod exit_codes;
pub mod formats;
pub mod fsx;
#[doc(hidden)]
pub mod fuzz;
pub mod measure;
pub mod memory;
pub mod model;
pub mod report;
pub mod sizing;
pub mod treat;

pub use commands::run;
