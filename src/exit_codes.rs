//! Process exit codes.

use std::process::ExitCode;

/// No finding at or above `--fail-on` (or a command that does not judge).
pub const HEALTHY: u8 = 0;
/// A finding at or above `--fail-on`.
pub const FINDINGS: u8 = 1;
/// Usage error, or nothing could be read or written.
pub const ERROR: u8 = 2;

pub fn code(c: u8) -> ExitCode {
    ExitCode::from(c)
}
