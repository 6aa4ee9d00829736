#![no_main]
// cargo-fuzz target: session_doctor::fuzz::whole_docker_agent (see src/fuzz.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| session_doctor::fuzz::whole_docker_agent(data));
