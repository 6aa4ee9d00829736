use clap::Parser;
use std::process::ExitCode;

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
