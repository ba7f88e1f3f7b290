//! A small deterministic random source (xorshift64) for tests that pick at random: the
//! same picks every run, so a failure reproduces.

pub struct Rng(pub u64);

impl Rng {
    /// The next number; the seed must not be 0 (xorshift would stay there).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
