#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fragfs_fuzz::basic_auth(data));
