#![no_main]
// cargo-fuzz target: session_doctor::fuzz::whole_hermes (see src/fuzz.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| session_doctor::fuzz::whole_hermes(data));
