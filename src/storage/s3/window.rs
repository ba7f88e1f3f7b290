//! The read-ahead window of a sequential reader of one object, as mountpoint-s3's
//! prefetcher sizes it: a request costs a round trip, so a reader going through an object
//! in order should find its next bytes fetched already; the window starts small (a reader
//! that stops early wastes little), doubles each time the reader comes within half a
//! window of what was fetched (it keeps up), and stops growing at a bound (memory). A
//! read that does not continue the stream starts it over: random readers, whose reads
//! never continue one another, never fetch ahead.

use std::collections::HashMap;
use std::ops::Range;

/// The first window: about what one tile of a typical array holds.
pub const FIRST_WINDOW: u64 = 1 << 20;

/// Objects followed at most (open files being read); the least recently read go.
const STREAMS: usize = 256;

/// How far from where the last read ended a read may start and still continue the
/// stream: chunk reads skip the chunk headers between them, and serving threads finish
/// their reads a little out of order.
const SLACK: u64 = 256 << 10;

#[derive(Debug, Clone, Copy)]
struct Stream {
    /// End of the furthest read so far.
    next: u64,
    /// End of what was fetched (or asked for) ahead.
    ahead_until: u64,
    window: u64,
    used: u64,
}

#[derive(Debug)]
pub struct Windows {
    streams: HashMap<String, Stream>,
    max_window: u64,
    tick: u64,
}

impl Windows {
    /// Windows grow up to `max_window` bytes (at least the first window).
    pub fn new(max_window: u64) -> Windows {
        Windows {
            streams: HashMap::new(),
            max_window: max_window.max(FIRST_WINDOW),
            tick: 0,
        }
    }

    fn stream(&mut self, key: &str) -> Option<&mut Stream> {
        self.tick += 1;
        let tick = self.tick;
        let s = self.streams.get_mut(key)?;
        s.used = tick;
        Some(s)
    }

    fn start(&mut self, key: &str, end: u64) {
        if self.streams.len() >= STREAMS && !self.streams.contains_key(key) {
            if let Some(oldest) = self
                .streams
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone())
            {
                self.streams.remove(&oldest);
            }
        }
        self.streams.insert(
            key.to_string(),
            Stream {
                next: end,
                ahead_until: end,
                window: FIRST_WINDOW,
                used: self.tick,
            },
        );
    }

    /// Notes a read of `range` of `key` (an object of `size` bytes); returns what to
    /// fetch ahead of the reader, if anything.
    pub fn on_read(&mut self, key: &str, range: Range<u64>, size: u64) -> Option<Range<u64>> {
        let max = self.max_window;
        let Some(s) = self.stream(key) else {
            self.start(key, range.end);
            return None;
        };
        let continues = range.start + SLACK >= s.next && range.start <= s.next + SLACK;
        if !continues {
            self.start(key, range.end);
            return None;
        }
        s.next = s.next.max(range.end);
        // Keeps up: within half a window of the end of what was fetched ahead.
        if s.next + s.window / 2 < s.ahead_until {
            return None;
        }
        let from = s.ahead_until.max(s.next);
        let to = (s.next + s.window).min(size);
        s.window = (s.window * 2).min(max);
        s.ahead_until = s.ahead_until.max(to);
        (from < to).then_some(from..to)
    }

    /// A hint from above that a sequential reader will read `range` of `key`: what to
    /// fetch now, past what was fetched already and no further than the reader's
    /// window, which doubles with each hint (hints come only while the reader keeps on).
    pub fn on_hint(&mut self, key: &str, range: Range<u64>) -> Option<Range<u64>> {
        let max = self.max_window;
        if self.stream(key).is_none() {
            self.start(key, range.start);
        }
        let s = self.stream(key)?;
        let from = s.ahead_until.max(range.start);
        if from >= range.end {
            return None;
        }
        let to = range.end.min(from + s.window);
        s.window = (s.window * 2).min(max);
        s.ahead_until = to;
        Some(from..to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_readers_get_a_doubling_window_random_ones_none() {
        let mut w = Windows::new(4 * FIRST_WINDOW);
        let size = 1 << 40;
        let step = 256 << 10;
        // The first read of an object fetches nothing ahead (it may be a random reader).
        assert_eq!(w.on_read("k", 0..step, size), None);
        let mut ahead = Vec::new();
        let mut at = step;
        while at < 32 * FIRST_WINDOW {
            if let Some(r) = w.on_read("k", at..at + step, size) {
                ahead.push(r);
            }
            at += step;
        }
        let lens: Vec<u64> = ahead.iter().map(|r| r.end - r.start).collect();
        assert_eq!(ahead[0], 2 * step..2 * step + FIRST_WINDOW);
        assert!(lens.windows(2).all(|p| p[1] <= 4 * FIRST_WINDOW));
        assert!(
            ahead.windows(2).all(|p| p[0].end == p[1].start),
            "{ahead:?}"
        );
        let largest = ahead.iter().map(|r| r.end - r.start).max().unwrap();
        assert!(
            largest > FIRST_WINDOW && largest <= 4 * FIRST_WINDOW,
            "{lens:?}"
        );
        // Random reads, never two in a row close together: nothing ahead, ever.
        let mut rng = 12345u64;
        for _ in 0..1000 {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let at = (rng >> 20) % (1 << 34) * 4096;
            assert_eq!(w.on_read("r", at..at + 4096, size), None);
        }
        // Nothing past the end of the object.
        let mut w = Windows::new(FIRST_WINDOW);
        w.on_read("s", 0..10, 100);
        assert_eq!(w.on_read("s", 10..20, 100), Some(20..100));
        assert_eq!(w.on_read("s", 20..30, 100), None);
        // Hints: the window's worth at a time, doubling, never twice the same bytes.
        let mut w = Windows::new(4 * FIRST_WINDOW);
        let m = FIRST_WINDOW;
        assert_eq!(w.on_hint("h", 0..10 * m), Some(0..m));
        assert_eq!(w.on_hint("h", 0..10 * m), Some(m..3 * m));
        assert_eq!(w.on_hint("h", 2 * m..3 * m), None);
        assert_eq!(w.on_hint("h", 3 * m..20 * m), Some(3 * m..7 * m));
        assert_eq!(w.on_hint("h", 7 * m..20 * m), Some(7 * m..11 * m));
    }
}
