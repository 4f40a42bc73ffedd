//! The LSTM state a batch carries: [`StateRows`], the rows of a batch's
//! state a pass over them reads and replaces, and [`Carry`], the state handed
//! from one batch to the next under the SR-FCA public code's rule.

use fedcluster_core::Workspace;

use super::super::CharLstm;

/// The state of the windows `rows` of a batch, as a pass over those rows
/// reads and replaces it: whatever the pass's chunks, the batch's state keeps
/// the layout of [`CharLstm::state_len`].
pub(in crate::lstm) struct StateRows<'a> {
    state: &'a mut [f32],
    windows: usize,
    rows: std::ops::Range<usize>,
    hidden: usize,
}

impl<'a> StateRows<'a> {
    /// Rows `rows` of the state of `windows` windows of `net`.
    pub(in crate::lstm) fn new(
        net: &CharLstm,
        state: &'a mut [f32],
        windows: usize,
        rows: std::ops::Range<usize>,
    ) -> Self {
        debug_assert_eq!(state.len(), net.state_len(windows));
        Self {
            state,
            windows,
            rows,
            hidden: net.hidden,
        }
    }

    /// Where layer `k`'s `h` and `c` of the rows start.
    fn at(&self, k: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let (wh, h) = (self.windows * self.hidden, self.hidden);
        let rows = self.rows.start * h..self.rows.end * h;
        let h_at = 2 * k * wh;
        let c_at = h_at + wh;
        (
            h_at + rows.start..h_at + rows.end,
            c_at + rows.start..c_at + rows.end,
        )
    }

    /// Layer `k`'s `(h, c)` of the rows.
    pub(in crate::lstm) fn layer(&self, k: usize) -> (&[f32], &[f32]) {
        let (h, c) = self.at(k);
        (&self.state[h], &self.state[c])
    }

    /// Replaces layer `k`'s `(h, c)` of the rows.
    pub(in crate::lstm) fn set_layer(&mut self, k: usize, h: &[f32], c: &[f32]) {
        let (h_at, c_at) = self.at(k);
        self.state[h_at].copy_from_slice(h);
        self.state[c_at].copy_from_slice(c);
    }
}

/// The state carried from batch to batch: zeros at the first batch and
/// whenever a batch's size differs from the last one's (the code's `if
/// batch_size is None or X.shape[0] != batch_size: hidden =
/// model.zero_state(batch_size)`).
pub(super) struct Carry {
    buf: Vec<f32>,
    per_window: usize,
    windows: Option<usize>,
}

impl Carry {
    /// The state a batch of `windows` windows starts from.
    pub(super) fn for_batch(&mut self, windows: usize) -> &mut [f32] {
        if self.windows != Some(windows) {
            self.buf.clear();
            self.buf.resize(windows * self.per_window, 0.0);
            self.windows = Some(windows);
        }
        &mut self.buf
    }
}

/// Runs `f` with a fresh [`Carry`] over `Workspace` buffer 1, lent out and
/// put back so that it grows on first use only.
pub(super) fn with_carry<R>(
    ws: &mut Workspace,
    per_window: usize,
    f: impl FnOnce(&mut Carry, &mut Workspace) -> R,
) -> R {
    if ws.bufs.len() < 2 {
        ws.bufs.resize_with(2, Vec::new);
    }
    let mut carry = Carry {
        buf: std::mem::take(&mut ws.bufs[1]),
        per_window,
        windows: None,
    };
    let out = f(&mut carry, ws);
    ws.bufs[1] = carry.buf;
    out
}
