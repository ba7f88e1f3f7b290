//! From values to pixels and back to text: linear scales, axis ticks at round numbers,
//! and timestamps as dates.

/// A linear map of `[d0, d1]` onto `[p0, p1]` (an empty domain is widened by one unit
/// each way, so a single value sits in the middle).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub d0: f64,
    pub d1: f64,
    pub p0: f64,
    pub p1: f64,
}

impl Scale {
    pub fn new(d0: f64, d1: f64, p0: f64, p1: f64) -> Scale {
        let (d0, d1) = if d1 > d0 && (d1 - d0).is_finite() {
            (d0, d1)
        } else {
            (d0 - 1.0, d0 + 1.0)
        };
        Scale { d0, d1, p0, p1 }
    }

    /// The pixel of value `v` (clamped to the scale's ends, so a value past them, or an
    /// infinity, stays on the picture).
    pub fn at(&self, v: f64) -> f64 {
        let x = (v - self.d0) / (self.d1 - self.d0);
        let x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
        self.p0 + x * (self.p1 - self.p0)
    }
}

/// About `want` values at round steps (1, 2 or 5 times a power of ten) inside `[lo, hi]`;
/// integer steps only when `integer`. Each with its label.
pub fn ticks(lo: f64, hi: f64, want: usize, integer: bool) -> Vec<(f64, String)> {
    if !lo.is_finite() || !hi.is_finite() || hi < lo {
        return Vec::new();
    }
    let raw = ((hi - lo) / want.max(1) as f64).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let mut step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    if integer {
        step = step.max(1.0).round();
    }
    let decimals = if integer || step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    let first = (lo / step).ceil();
    let mut out = Vec::new();
    let mut k = first;
    while k * step <= hi && out.len() <= 2 * want + 2 {
        let v = k * step;
        // -0.0 prints as "-0".
        let v = if v == 0.0 { 0.0 } else { v };
        out.push((v, format!("{v:.decimals$}")));
        k += 1.0;
    }
    out
}

/// `1970-01-01T00:00:00.001Z`: a timestamp (ms since the epoch) as a UTC date and time.
pub fn iso(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        ms % 1000
    )
}

/// The date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `12,345`: a count with thousands separated, as the hover texts print them.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_clamp_and_widen() {
        let s = Scale::new(0.0, 10.0, 100.0, 200.0);
        assert_eq!(s.at(5.0), 150.0);
        assert_eq!(s.at(-3.0), 100.0);
        assert_eq!(s.at(f64::INFINITY), 200.0);
        let one = Scale::new(4.0, 4.0, 0.0, 10.0);
        assert_eq!(one.at(4.0), 5.0);
    }

    #[test]
    fn ticks_fall_on_round_numbers() {
        let t = ticks(0.0, 12.0, 6, true);
        let v: Vec<f64> = t.iter().map(|(v, _)| *v).collect();
        assert_eq!(v, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
        let t = ticks(-0.5, 0.5, 5, false);
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["-0.4", "-0.2", "0.0", "0.2", "0.4"]);
        assert_eq!(ticks(0.0, 2.0, 6, true).len(), 3, "integers: no half steps");
        assert!(ticks(f64::NAN, 1.0, 6, false).is_empty());
    }

    #[test]
    fn dates_and_counts() {
        assert_eq!(iso(1), "1970-01-01T00:00:00.001Z");
        assert_eq!(iso(1_795_338_321_593), "2026-11-22T09:05:21.593Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(count(100_000), "100,000");
        assert_eq!(count(999), "999");
    }
}
