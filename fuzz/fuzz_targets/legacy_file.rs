#![no_main]
// cargo-fuzz target: session_doctor::fuzz::legacy_file (see src/fuzz.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| session_doctor::fuzz::legacy_file(data));
