//! One split (training or test) assembled from its files, each decoded
//! straight into the split's final buffers.
//!
//! A split is read from `members` files (CIFAR-10's five training batches,
//! one file otherwise). Its buffers are reserved once for the whole split and
//! grow only as records are decoded into them, so the memory in use follows
//! the data actually read, never a size a damaged header declares.
//!
//! - From a directory every file's size is known before reading
//!   ([`Split::known`]): each file fills its own range, in order.
//! - From an archive the members arrive in the archive's order, each size
//!   known only when its member is reached ([`Split::guessed`]). The layout
//!   assumes every member the size of the first one decoded (true of the real
//!   sets): once that member has been read whole, a later member of the same
//!   size is decoded into its own range even ahead of the others (the gap
//!   before it is filled when they come). The first member met, if it is not
//!   the first file, and any member of another size are decoded apart; the
//!   former moves into its range once read, the latter are joined at the end.

use std::collections::TryReserveError;

use super::IMAGE_BYTES;

/// A decoded split: images channels-last in `[0, 1]`, one label each.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Decoded {
    /// `labels.len() * 3072` values.
    pub(crate) images: Vec<f32>,
    /// One class per image.
    pub(crate) labels: Vec<u32>,
}

impl Decoded {
    /// Makes room for `records` more records, without filling it.
    fn reserve(&mut self, records: usize) -> Result<(), TryReserveError> {
        let values = records.saturating_mul(IMAGE_BYTES);
        self.images
            .try_reserve_exact(values.saturating_sub(self.images.capacity() - self.images.len()))?;
        self.labels
            .try_reserve_exact(records.saturating_sub(self.labels.capacity() - self.labels.len()))
    }

    /// Grows to at least `records` records (zeros until decoded over).
    fn grow_to(&mut self, records: usize) -> Result<(), TryReserveError> {
        if self.labels.len() < records {
            self.reserve(records - self.labels.len())?;
            self.images.resize(records * IMAGE_BYTES, 0.0);
            self.labels.resize(records, 0);
        }
        Ok(())
    }
}

/// Where a member's records are decoded, chunk by chunk.
pub(crate) struct Member<'a> {
    out: &'a mut Decoded,
    /// Record of `out` the next chunk starts at.
    next: usize,
}

impl Member<'_> {
    /// The next `count` records: `count * 3072` values and `count` labels,
    /// grown into the buffers now.
    pub(crate) fn chunk(
        &mut self,
        count: usize,
    ) -> Result<(&mut [f32], &mut [u32]), TryReserveError> {
        let (start, end) = (self.next, self.next + count);
        self.out.grow_to(end)?;
        self.next = end;
        Ok((
            &mut self.out.images[start * IMAGE_BYTES..end * IMAGE_BYTES],
            &mut self.out.labels[start..end],
        ))
    }
}

/// A split being filled, member by member, in any order.
#[derive(Debug)]
pub(crate) struct Split {
    /// Records each member holds in the shared layout; `None` until the
    /// layout is known (from the files' sizes, or from the first member read
    /// whole).
    counts: Vec<Option<usize>>,
    /// First record of each member's range in the shared layout.
    starts: Vec<usize>,
    /// Records each member met holds.
    met: Vec<Option<usize>>,
    /// The shared buffers, grown up to the end of the furthest range decoded.
    shared: Decoded,
    /// The members decoded apart, in their own buffers.
    apart: Vec<Option<Decoded>>,
}

impl Split {
    /// A split of members holding `counts` records, in this order.
    pub(crate) fn known(counts: &[usize]) -> Result<Self, TryReserveError> {
        let mut split = Self::guessed(counts.len());
        split.lay_out(counts);
        split
            .shared
            .reserve(counts.iter().fold(0usize, |a, n| a.saturating_add(*n)))?;
        Ok(split)
    }

    /// A split of `members` members whose sizes are learnt as they come.
    pub(crate) fn guessed(members: usize) -> Self {
        Self {
            counts: vec![None; members],
            starts: vec![0; members],
            met: vec![None; members],
            shared: Decoded::default(),
            apart: (0..members).map(|_| None).collect(),
        }
    }

    fn lay_out(&mut self, counts: &[usize]) {
        let mut start = 0usize;
        for (k, &n) in counts.iter().enumerate() {
            self.counts[k] = Some(n);
            self.starts[k] = start;
            start = start.saturating_add(n);
        }
    }

    /// Whether member `k` has been met already.
    pub(crate) fn has(&self, k: usize) -> bool {
        self.met[k].is_some()
    }

    /// Indices of the members not met yet.
    pub(crate) fn missing(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.met.len()).filter(|k| self.met[*k].is_none())
    }

    /// Records of the members met so far.
    pub(crate) fn records(&self) -> usize {
        self.met.iter().flatten().sum()
    }

    /// Where member `k`'s `n` records go; call [`Self::complete`] once
    /// they are all decoded.
    pub(crate) fn member(&mut self, k: usize, n: usize) -> Result<Member<'_>, TryReserveError> {
        let first = self.met.iter().all(Option::is_none);
        self.met[k] = Some(n);
        if first && self.counts[k].is_none() {
            // Room for every member of this size; only what is decoded is used.
            self.shared.reserve(n.saturating_mul(self.counts.len()))?;
        }
        if self.counts[k] == Some(n) || (first && k == 0) {
            // The gap before the range, if any, is of members of a size
            // already read whole.
            self.shared.grow_to(self.starts[k])?;
            return Ok(Member {
                out: &mut self.shared,
                next: self.starts[k],
            });
        }
        let mut piece = Decoded::default();
        piece.reserve(n)?;
        Ok(Member {
            out: self.apart[k].insert(piece),
            next: 0,
        })
    }

    /// Member `k` has been decoded whole: the first one read whole sets the
    /// layout, and moves into its range if it was decoded apart.
    pub(crate) fn complete(&mut self, k: usize) -> Result<(), TryReserveError> {
        let Some(n) = self.met[k] else {
            return Ok(());
        };
        if self.counts.iter().all(Option::is_none) {
            self.lay_out(&vec![n; self.counts.len()]);
        }
        if self.counts[k] != Some(n) {
            return Ok(());
        }
        if let Some(piece) = self.apart[k].take() {
            let (start, end) = (self.starts[k], self.starts[k] + n);
            self.shared.grow_to(end)?;
            self.shared.images[start * IMAGE_BYTES..end * IMAGE_BYTES]
                .copy_from_slice(&piece.images);
            self.shared.labels[start..end].copy_from_slice(&piece.labels);
        }
        Ok(())
    }

    /// The split, its members in order. Every member must have been met and
    /// completed.
    pub(crate) fn finish(mut self) -> Result<Decoded, TryReserveError> {
        if self.apart.iter().all(Option::is_none) {
            return Ok(self.shared);
        }
        let mut out = Decoded::default();
        out.reserve(self.records())?;
        for k in 0..self.met.len() {
            if let Some(piece) = self.apart[k].take() {
                out.images.extend_from_slice(&piece.images);
                out.labels.extend_from_slice(&piece.labels);
            } else {
                let (start, n) = (self.starts[k], self.met[k].unwrap_or(0));
                out.images.extend_from_slice(
                    &self.shared.images[start * IMAGE_BYTES..(start + n) * IMAGE_BYTES],
                );
                out.labels
                    .extend_from_slice(&self.shared.labels[start..start + n]);
            }
        }
        Ok(out)
    }
}
