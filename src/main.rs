use clap::Parser;
use std::process::ExitCode;

/// mimalloc in place of the system allocator: parsing allocates and frees
/// many small strings and values per line, and glibc's malloc took 15% of
/// `check`'s time on the many-sessions benchmark (benches/RESULTS.md).
/// Its v2 line: v3 held 85 MiB at the peak of `check` on the 1 GB corpus,
/// v2 72 MiB (the target is 96 MiB), at the same speed.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    session_doctor::memory::no_huge_pages();
    let cli = session_doctor::cli::Cli::parse();
    let code = match session_doctor::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "session-doctor: error: {}",
                session_doctor::error::chain(&e)
            );
            session_doctor::exit_codes::code(session_doctor::exit_codes::ERROR)
        }
    };
    session_doctor::fsx::end_of_run();
    code
}
