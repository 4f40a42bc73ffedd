//! Text samples stored compactly, and LEAF's Shakespeare samples and
//! train/test split of a role's text.
//!
//! LEAF's samples of a text are its windows of [`SEQ_LEN`] characters at
//! every offset, each labelled with the character after it; neighbouring
//! windows share all but one character, so [`TextSamples`] keeps the text once
//! and each window's start and label.

use super::alphabet::SEQ_LEN;

/// Windows over symbol ids, each with its label. Window `j` is
/// `text[starts[j]..starts[j] + seq_len]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextSamples {
    /// Symbols per window.
    pub seq_len: usize,
    /// The symbols the windows are cut from.
    pub text: Vec<u8>,
    /// Where each window starts in `text`.
    pub starts: Vec<usize>,
    /// Each window's label.
    pub labels: Vec<u8>,
}

impl TextSamples {
    /// No windows of `seq_len` symbols yet.
    pub fn new(seq_len: usize) -> Self {
        Self {
            seq_len,
            ..Self::default()
        }
    }

    /// Number of windows.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Window `j`.
    pub fn window(&self, j: usize) -> &[u8] {
        &self.text[self.starts[j]..self.starts[j] + self.seq_len]
    }

    /// Appends a window (of `seq_len` symbols) and its label; a window that
    /// continues the previous one by one symbol adds one symbol to the text.
    pub fn push(&mut self, window: &[u8], label: u8) {
        debug_assert_eq!(window.len(), self.seq_len);
        let next = self.starts.last().map_or(self.text.len(), |s| s + 1);
        let have = self.text.len().saturating_sub(next);
        let continues =
            !self.starts.is_empty() && have < self.seq_len && self.text[next..] == window[..have];
        if continues {
            self.text.extend_from_slice(&window[have..]);
            self.starts.push(next);
        } else {
            self.starts.push(self.text.len());
            self.text.extend_from_slice(window);
        }
        self.labels.push(label);
    }

    /// The first `n` windows (all when `n` is 0 or at least their number).
    pub fn truncate(&mut self, n: usize) {
        if n > 0 && n < self.len() {
            self.starts.truncate(n);
            self.labels.truncate(n);
            let end = self
                .starts
                .iter()
                .map(|s| s + self.seq_len)
                .max()
                .unwrap_or(0);
            self.text.truncate(end);
        }
    }

    /// The windows as model inputs (symbol ids as `f32`, one row of
    /// `seq_len` per window) and the labels as classes.
    pub fn features(&self) -> (Vec<f32>, Vec<u32>) {
        let mut x = Vec::with_capacity(self.len() * self.seq_len);
        for j in 0..self.len() {
            x.extend(self.window(j).iter().map(|&s| f32::from(s)));
        }
        (x, self.labels.iter().map(|&l| u32::from(l)).collect())
    }
}

/// LEAF's text normalisation (`shake_utils.py`): the lines joined with single
/// spaces plus a trailing space, every run of two or more spaces made one.
pub fn normalise(lines: &[String]) -> String {
    let mut text = String::new();
    for line in lines {
        text.push_str(line);
        text.push(' ');
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if !(c == ' ' && out.ends_with(' ')) {
            out.push(c);
        }
    }
    out
}

/// LEAF's Shakespeare train/test split of a text's `n = len - SEQ_LEN`
/// windows (`split_data.py`, by sample): the first `max(1, ⌊fraction · n⌋)`
/// windows train, and the test windows start `SEQ_LEN - 1` windows after the
/// last training window, so no test label is a training label. `None` when
/// the text gives no test window (LEAF drops such a user).
pub fn leaf_split(text: &[u8], fraction: f64) -> Option<(TextSamples, TextSamples)> {
    let n = text.len().checked_sub(SEQ_LEN)?;
    if n < 2 {
        return None;
    }
    let train_count = ((fraction * n as f64) as usize).max(1);
    let test_start = train_count + SEQ_LEN - 1;
    if test_start >= n {
        return None;
    }
    let samples = |from: usize, to: usize| TextSamples {
        seq_len: SEQ_LEN,
        text: text[from..to + SEQ_LEN].to_vec(),
        starts: (0..to - from).collect(),
        labels: text[from + SEQ_LEN..to + SEQ_LEN].to_vec(),
    };
    Some((samples(0, train_count), samples(test_start, n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_windows_share_the_text() {
        let mut s = TextSamples::new(3);
        s.push(&[1, 2, 3], 4);
        s.push(&[2, 3, 4], 5);
        s.push(&[3, 4, 5], 6);
        assert_eq!(
            (s.text.clone(), s.starts.clone()),
            (vec![1, 2, 3, 4, 5], vec![0, 1, 2])
        );
        // A window that does not continue starts anew.
        s.push(&[9, 9, 9], 1);
        assert_eq!(s.starts, [0, 1, 2, 5]);
        assert_eq!(s.window(3), [9, 9, 9]);
        assert_eq!(s.window(1), [2, 3, 4]);
        let (x, y) = s.features();
        assert_eq!(x.len(), 12);
        assert_eq!(y, [4, 5, 6, 1]);
        s.truncate(2);
        assert_eq!((s.len(), s.text.len()), (2, 4));
    }

    #[test]
    fn normalise_joins_lines_with_one_space() {
        let lines = ["To be,  or".to_string(), "not   to be".to_string()];
        assert_eq!(normalise(&lines), "To be, or not to be ");
    }

    #[test]
    fn leafs_split_leaves_a_gap_of_seq_len_minus_one_windows() {
        // n = 500 windows: 400 train, the test starts at window 479.
        let text: Vec<u8> = (0..580).map(|i| (i % 80) as u8).collect();
        let (train, test) = leaf_split(&text, 0.8).unwrap();
        assert_eq!((train.len(), test.len()), (400, 500 - 479));
        assert_eq!(train.window(0), &text[..80]);
        assert_eq!(train.labels[399], text[479]);
        assert_eq!(test.window(0), &text[479..559]);
        assert_eq!(test.labels[20], text[579]);
        // The last training label is text[479], the first test window starts
        // there: the splits share that one character and no label.
        assert_eq!(test.window(0)[0], train.labels[399]);
        // LEAF's smallest user at fraction 0.8 has 396 windows.
        let len = |n: usize| vec![0u8; n + SEQ_LEN];
        assert!(leaf_split(&len(395), 0.8).is_none());
        assert_eq!(leaf_split(&len(396), 0.8).unwrap().1.len(), 1);
        assert!(leaf_split(&len(1), 0.8).is_none());
    }
}
