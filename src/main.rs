use clap::Parser;
use std::process::ExitCode;

/// mimalloc in place of the system allocator: parsing allocates and frees
/// many small strings and values per line, and glibc's malloc took 15% of
/// `check`'s time on the many-sessions benchmark (benches/RESULTS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = session_doctor::cli::Cli::parse();
    match session_doctor::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("session-doctor: error: {e:#}");
            session_doctor::exit_codes::code(session_doctor::exit_codes::ERROR)
        }
    }
}
