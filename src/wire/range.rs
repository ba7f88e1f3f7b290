//! The `Range` header (RFC 9110 §14), one byte range: what a GET of a file answers.
//!
//! A single range is served as asked (206); several ranges are answered with the whole
//! body (200), which the RFC allows and every client accepts. A range that starts past
//! the end, or whose end comes before its start, is not satisfiable (416), as nginx
//! answers; a header that is not a byte range at all is ignored (200), as the RFC says.

/// What a GET answers for a file of `size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The whole file (no `Range`, several ranges, or a header that is not one).
    Whole,
    /// Bytes `[start, end)` (206 Partial Content).
    Part { start: u64, end: u64 },
    /// 416 Range Not Satisfiable.
    Unsatisfiable,
}

/// The answer to `Range: header` for a file of `size` bytes.
pub fn answer(header: &str, size: u64) -> Answer {
    let Some(spec) = header.trim().strip_prefix("bytes=") else {
        return Answer::Whole;
    };
    if spec.contains(',') {
        return Answer::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Answer::Whole;
    };
    let number = |s: &str| -> Option<Option<u64>> {
        let s = s.trim();
        if s.is_empty() {
            Some(None)
        } else if s.bytes().all(|b| b.is_ascii_digit()) {
            // Digits too many for u64 still mean "very large".
            Some(Some(s.parse().unwrap_or(u64::MAX)))
        } else {
            None
        }
    };
    let (Some(first), Some(last)) = (number(first), number(last)) else {
        return Answer::Whole;
    };
    match (first, last) {
        // bytes=-n: the last n bytes.
        (None, Some(n)) => {
            if n == 0 || size == 0 {
                Answer::Unsatisfiable
            } else {
                Answer::Part {
                    start: size - n.min(size),
                    end: size,
                }
            }
        }
        (None, None) => Answer::Whole,
        (Some(start), last) => {
            if last.is_some_and(|l| l < start) || start >= size {
                return Answer::Unsatisfiable;
            }
            let end = last.map_or(size, |l| l.saturating_add(1).min(size));
            Answer::Part { start, end }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_ranges() {
        assert_eq!(
            answer("bytes=0-99", 1000),
            Answer::Part { start: 0, end: 100 }
        );
        assert_eq!(
            answer("bytes=990-", 1000),
            Answer::Part {
                start: 990,
                end: 1000
            }
        );
        assert_eq!(
            answer("bytes=-10", 1000),
            Answer::Part {
                start: 990,
                end: 1000
            }
        );
        assert_eq!(
            answer("bytes=-5000", 1000),
            Answer::Part {
                start: 0,
                end: 1000
            }
        );
        assert_eq!(
            answer("bytes=900-5000", 1000),
            Answer::Part {
                start: 900,
                end: 1000
            }
        );
        assert_eq!(
            answer("bytes=0-99999999999999999999999", 10),
            Answer::Part { start: 0, end: 10 }
        );
    }

    #[test]
    fn bad_ranges() {
        assert_eq!(answer("bytes=1000-", 1000), Answer::Unsatisfiable);
        assert_eq!(answer("bytes=5-2", 1000), Answer::Unsatisfiable);
        assert_eq!(
            answer("bytes=99999999999999999999999-", 10),
            Answer::Unsatisfiable
        );
        assert_eq!(answer("bytes=-0", 1000), Answer::Unsatisfiable);
        assert_eq!(answer("bytes=0-0", 0), Answer::Unsatisfiable);
    }

    #[test]
    fn what_is_not_one_range_is_the_whole_file() {
        for h in [
            "items=0-1",
            "bytes=0-1,5-6",
            "bytes=a-b",
            "bytes=-",
            "bytes=1",
            "",
        ] {
            assert_eq!(answer(h, 1000), Answer::Whole, "{h}");
        }
    }
}
