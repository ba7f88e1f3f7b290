//! Timestamped names of fragments, schemas and commit files (`01-array-layout.md` §3).

/// Which generation of TileDB wrote the name; it decides how fragment metadata is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameGeneration {
    /// `__<uuid>_<t>` (TileDB 1.4-1.5, format 1-2): whole-file fragment metadata.
    One,
    /// `__<t1>_<t2>_<uuid>` (TileDB 1.6-1.7, format 3-4).
    Two,
    /// `__<t1>_<t2>_<uuid>_<v>` (TileDB 2.0+, format 5+).
    Three,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampedName {
    pub t1: u64,
    pub t2: u64,
    pub uuid: String,
    /// The version the name claims: the suffix for generation THREE, 4 for TWO, 2 for ONE.
    /// The footer's version is authoritative once read.
    pub version: u32,
    pub generation: NameGeneration,
}

impl TimestampedName {
    /// Parses a name, ignoring a leading path and a trailing `.<ext>`. Returns `None` for
    /// anything that is not a timestamped name.
    pub fn parse(name: &str) -> Option<TimestampedName> {
        let base = name.rsplit('/').next().unwrap_or(name);
        let base = match base.rfind('.') {
            Some(dot) => &base[..dot],
            None => base,
        };
        let body = base.strip_prefix("__")?;
        let parts: Vec<&str> = body.split('_').collect();
        let ts = |s: &str| s.parse::<u64>().ok();
        match parts.as_slice() {
            [t1, t2, uuid, v] => Some(TimestampedName {
                t1: ts(t1)?,
                t2: ts(t2)?,
                uuid: uuid.to_string(),
                version: v.parse().ok()?,
                generation: NameGeneration::Three,
            }),
            [t1, t2, uuid] if uuid.len() == 32 => Some(TimestampedName {
                t1: ts(t1)?,
                t2: ts(t2)?,
                uuid: uuid.to_string(),
                version: 4,
                generation: NameGeneration::Two,
            }),
            [uuid, t] => Some(TimestampedName {
                t1: ts(t)?,
                t2: ts(t)?,
                uuid: uuid.to_string(),
                version: 2,
                generation: NameGeneration::One,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_three_generations() {
        let n = TimestampedName::parse("__fragments/__1_2_78a8cb4bc7baf4289de40d68fca71a8d_22.wrt")
            .unwrap();
        assert_eq!((n.t1, n.t2, n.version), (1, 2, 22));
        assert_eq!(n.generation, NameGeneration::Three);
        let n = TimestampedName::parse("__5_6_0fcdefaa40d34ff2a4b09153472fbdc2").unwrap();
        assert_eq!(
            (n.t1, n.t2, n.version, n.generation),
            (5, 6, 4, NameGeneration::Two)
        );
        let n = TimestampedName::parse("__5dc2cc9cce204a189f825fd4919d0c55_1541540586869").unwrap();
        assert_eq!(n.t1, 1541540586869);
        assert_eq!(n.generation, NameGeneration::One);
        assert_eq!(TimestampedName::parse("__schema"), None);
        assert_eq!(TimestampedName::parse("a0.tdb"), None);
    }
}
