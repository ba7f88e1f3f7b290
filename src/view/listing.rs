//! A folder's entries as one listing saw them ([`super::FileTree::listing`]): what a network
//! door pages through, however large the folder.
//!
//! [`super::FileTree::list`] numbers every entry at once. A tree keeps a bounded number of
//! idle numbers ([`super::nodes`]), so by the end of numbering the 100,000 entries of
//! a `fragments/` the first 34,464 were dropped again, and a door that then asked for
//! their attributes lost them (HTTP and WebDAV listed 65,536 entries, silently). A
//! listing instead keeps names and kinds, and what the tree needs to number entry `i`
//! when a door gets to it ([`super::FileTree::listed`]): each page's numbers are fresh, the
//! folder is listed once however many pages, and positions never shift between pages
//! (a rescan meanwhile changes later listings, not this one).

use std::any::Any;

use super::{Entry, Ino, Kind};

/// One listing of a folder.
pub struct Listing {
    dir: Ino,
    names: Vec<(String, Kind)>,
    numbers: Numbers,
}

/// How the entries get their numbers.
enum Numbers {
    /// The numbers the tree gave when it listed (a tree that numbers as it lists):
    /// used while they are in use, looked up again by name once dropped.
    Given(Vec<Ino>),
    /// What the tree keeps to number an entry itself (its node per entry).
    Kept(Box<dyn Any + Send + Sync>),
}

impl Listing {
    /// A listing of `dir` from what [`super::FileTree::list`] gave.
    pub fn of_entries(dir: Ino, entries: Vec<Entry>) -> Listing {
        let mut names = Vec::with_capacity(entries.len());
        let mut numbers = Vec::with_capacity(entries.len());
        for e in entries {
            numbers.push(e.ino);
            names.push((e.name, e.kind));
        }
        Listing {
            dir,
            names,
            numbers: Numbers::Given(numbers),
        }
    }

    /// A listing whose entries the tree numbers itself from `kept` (one item per
    /// entry, in order), which only that tree reads back ([`Listing::kept`]).
    pub fn of_kept<T: Send + Sync + 'static>(
        dir: Ino,
        names: Vec<(String, Kind)>,
        kept: T,
    ) -> Listing {
        Listing {
            dir,
            names,
            numbers: Numbers::Kept(Box::new(kept)),
        }
    }

    /// The folder listed.
    pub fn dir(&self) -> Ino {
        self.dir
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Entry `i`'s name and kind.
    pub fn name(&self, i: usize) -> Option<(&str, Kind)> {
        self.names.get(i).map(|(n, k)| (n.as_str(), *k))
    }

    /// Every entry's name and kind, in order.
    pub fn names(&self) -> impl Iterator<Item = (&str, Kind)> {
        self.names.iter().map(|(n, k)| (n.as_str(), *k))
    }

    /// The number the listing was given for entry `i`, if the tree numbered as it
    /// listed.
    pub fn given(&self, i: usize) -> Option<Ino> {
        match &self.numbers {
            Numbers::Given(n) => n.get(i).copied(),
            Numbers::Kept(_) => None,
        }
    }

    /// Entry `i` of a listing the tree numbered as it listed: its given number while
    /// `in_use` says the tree still uses it, else the name looked up again in the
    /// folder (what [`super::FileTree::listed`] does by default).
    pub fn given_entry(
        &self,
        i: usize,
        in_use: impl Fn(Ino) -> bool,
        lookup: impl Fn(Ino, &str) -> crate::error::Result<Entry>,
    ) -> crate::error::Result<Entry> {
        let (name, kind) = self
            .name(i)
            .ok_or_else(|| crate::error::Error::NotFound(format!("entry {i} of a listing")))?;
        match self.given(i) {
            Some(ino) if in_use(ino) => Ok(Entry {
                name: name.to_string(),
                ino,
                kind,
            }),
            _ => lookup(self.dir, name),
        }
    }

    /// What the tree kept to number the entries, if it is a `T`.
    pub fn kept<T: 'static>(&self) -> Option<&T> {
        match &self.numbers {
            Numbers::Kept(k) => k.downcast_ref(),
            Numbers::Given(_) => None,
        }
    }
}
