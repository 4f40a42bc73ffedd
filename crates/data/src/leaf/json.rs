//! One LEAF JSON file: `users` (ids), `num_samples` (one count per user),
//! `user_data` (`{id: {"x": [...], "y": [...]}}`) and optionally
//! `hierarchies` (Shakespeare: each user's play). Samples are text windows
//! (`x` strings over LEAF's alphabet, `y` one-character strings: Shakespeare)
//! or feature vectors (`x` arrays of numbers, `y` class indices: FEMNIST).
//!
//! The reader streams: each user's samples are decoded into their compact
//! form as they are parsed, never held as JSON values. Errors name the file,
//! and the user where there is one.

use std::fmt;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::alphabet::{SYMBOLS, character, symbol};
use super::samples::TextSamples;
use crate::error::{DataError, Result};

/// A user's samples.
#[derive(Clone, Debug, PartialEq)]
pub enum LeafSamples {
    /// Text windows over LEAF's alphabet and their next characters.
    Text(TextSamples),
    /// Feature vectors of `dim` values, row-major, and class indices.
    Features {
        /// Values per sample.
        dim: usize,
        /// `len * dim` values.
        x: Vec<f32>,
        /// One class per sample.
        y: Vec<u32>,
    },
}

impl LeafSamples {
    /// Number of samples.
    pub fn len(&self) -> usize {
        match self {
            Self::Text(t) => t.len(),
            Self::Features { y, .. } => y.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Values per sample: the window length or the feature count (0 when
    /// there are no samples to tell).
    pub fn dim(&self) -> usize {
        match self {
            Self::Text(t) => t.seq_len,
            Self::Features { dim, .. } => *dim,
        }
    }
}

/// One user of a file.
#[derive(Clone, Debug, PartialEq)]
pub struct LeafUser {
    /// The user id.
    pub id: String,
    /// Its hierarchy entry (Shakespeare: the play), when the file has them.
    pub hierarchy: Option<String>,
    /// Its samples.
    pub samples: LeafSamples,
}

/// Which split a file holds: LEAF's Shakespeare test files state
/// `num_samples` `SEQ_LEN - 1` higher than the windows they hold (its split
/// counts the gap), which the reader accepts in test files only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// `train/*.json`.
    Train,
    /// `test/*.json`.
    Test,
}

/// Reads the LEAF JSON file at `path`; the users in the order of its `users`.
pub fn read_leaf_json(path: &Path, split: Split) -> Result<Vec<LeafUser>> {
    let file = File::open(path).map_err(|e| DataError::io(path, e))?;
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, file));
    let raw = de
        .deserialize_map(FileVisitor)
        .and_then(|raw| de.end().map(|()| raw))
        .map_err(|e| DataError::format(path, format!("not a LEAF JSON file: {e}")))?;
    raw.check(split).map_err(|why| DataError::format(path, why))
}

/// A user to write: borrowed parts of a [`LeafUser`].
#[derive(Clone, Copy, Debug)]
pub struct UserRef<'a> {
    /// The user id.
    pub id: &'a str,
    /// Its hierarchy entry, if any (written only when every user has one).
    pub hierarchy: Option<&'a str>,
    /// Its samples.
    pub samples: &'a LeafSamples,
}

impl<'a> From<&'a LeafUser> for UserRef<'a> {
    fn from(u: &'a LeafUser) -> Self {
        Self {
            id: &u.id,
            hierarchy: u.hierarchy.as_deref(),
            samples: &u.samples,
        }
    }
}

/// Writes `users` as a LEAF JSON file at `path`, `num_samples` being each
/// user's number of samples.
pub fn write_leaf_json(path: &Path, users: &[UserRef<'_>]) -> Result<()> {
    let file = File::create(path).map_err(|e| DataError::io(path, e))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    write_users(&mut out, users)
        .and_then(|()| out.flush())
        .map_err(|e| DataError::io(path, e))
}

fn write_users(out: &mut impl Write, users: &[UserRef<'_>]) -> std::io::Result<()> {
    let ids: Vec<&str> = users.iter().map(|u| u.id).collect();
    let counts: Vec<usize> = users.iter().map(|u| u.samples.len()).collect();
    write!(out, "{{\"users\": ")?;
    serde_json::to_writer(&mut *out, &ids)?;
    if users.iter().all(|u| u.hierarchy.is_some()) {
        let plays: Vec<&str> = users.iter().filter_map(|u| u.hierarchy).collect();
        write!(out, ", \"hierarchies\": ")?;
        serde_json::to_writer(&mut *out, &plays)?;
    }
    write!(out, ", \"num_samples\": ")?;
    serde_json::to_writer(&mut *out, &counts)?;
    write!(out, ", \"user_data\": {{")?;
    for (i, user) in users.iter().enumerate() {
        if i > 0 {
            write!(out, ", ")?;
        }
        serde_json::to_writer(&mut *out, user.id)?;
        write!(out, ": {{\"x\": [")?;
        match user.samples {
            LeafSamples::Text(t) => {
                let mut window = String::with_capacity(t.seq_len);
                for j in 0..t.len() {
                    window.clear();
                    window.extend(t.window(j).iter().map(|&s| character(s)));
                    write!(out, "{}", if j > 0 { ", " } else { "" })?;
                    serde_json::to_writer(&mut *out, &window)?;
                }
                write!(out, "], \"y\": [")?;
                for (j, &label) in t.labels.iter().enumerate() {
                    write!(out, "{}", if j > 0 { ", " } else { "" })?;
                    serde_json::to_writer(&mut *out, &character(label).to_string())?;
                }
            }
            LeafSamples::Features { dim, x, y } => {
                for (j, row) in x.chunks_exact((*dim).max(1)).enumerate() {
                    write!(out, "{}", if j > 0 { ", " } else { "" })?;
                    serde_json::to_writer(&mut *out, row)?;
                }
                write!(out, "], \"y\": ")?;
                serde_json::to_writer(&mut *out, y)?;
                write!(out, "}}")?;
                continue;
            }
        }
        write!(out, "]}}")?;
    }
    writeln!(out, "}}}}")
}

/// A file as parsed, before its parts are checked against each other.
struct RawFile {
    users: Option<Vec<String>>,
    num_samples: Option<Vec<u64>>,
    hierarchies: Option<Vec<Option<String>>>,
    user_data: Option<Vec<(String, LeafSamples)>>,
}

impl RawFile {
    /// Users in `users` order; the error names the first inconsistency.
    fn check(self, split: Split) -> Result<Vec<LeafUser>, String> {
        let users = self.users.ok_or("no `users` list")?;
        let counts = self.num_samples.ok_or("no `num_samples` list")?;
        let mut data = self.user_data.ok_or("no `user_data` object")?;
        if counts.len() != users.len() {
            return Err(format!(
                "`num_samples` has {} entries for {} users",
                counts.len(),
                users.len()
            ));
        }
        let hierarchies = match self.hierarchies {
            Some(h) if h.len() != users.len() => {
                return Err(format!(
                    "`hierarchies` has {} entries for {} users",
                    h.len(),
                    users.len()
                ));
            }
            Some(h) => h,
            None => vec![None; users.len()],
        };
        data.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = data.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(format!("user `{}` appears twice in `user_data`", w[0].0));
        }
        let mut taken = vec![false; data.len()];
        let mut out = Vec::with_capacity(users.len());
        for ((id, count), hierarchy) in users.into_iter().zip(counts).zip(hierarchies) {
            let at = data
                .binary_search_by(|(k, _)| k.as_str().cmp(&id))
                .map_err(|_| format!("user `{id}` is in `users` but missing from `user_data`"))?;
            if std::mem::replace(&mut taken[at], true) {
                return Err(format!("user `{id}` appears twice in `users`"));
            }
            let samples =
                std::mem::replace(&mut data[at].1, LeafSamples::Text(TextSamples::new(0)));
            let n = samples.len() as u64;
            let gap = match (&samples, split) {
                (LeafSamples::Text(t), Split::Test) => t.seq_len as u64 - 1,
                _ => 0,
            };
            if count != n && !(gap > 0 && count == n + gap) {
                return Err(format!(
                    "user `{id}`: `num_samples` says {count} but `user_data` holds {n} samples"
                ));
            }
            out.push(LeafUser {
                id,
                hierarchy,
                samples,
            });
        }
        if let Some(at) = taken.iter().position(|t| !t) {
            return Err(format!(
                "user `{}` is in `user_data` but not in `users`",
                data[at].0
            ));
        }
        let mut with_samples = out.iter().filter(|u| !u.samples.is_empty());
        if let Some(first) = with_samples.next() {
            let is_text = |u: &LeafUser| matches!(u.samples, LeafSamples::Text(_));
            for user in with_samples {
                if is_text(user) != is_text(first) {
                    return Err(format!(
                        "user `{}`: text and numeric samples in one file",
                        user.id
                    ));
                }
                if user.samples.dim() != first.samples.dim() {
                    return Err(format!(
                        "user `{}`: samples of {} values where user `{}` has {}",
                        user.id,
                        user.samples.dim(),
                        first.id,
                        first.samples.dim()
                    ));
                }
            }
        }
        Ok(out)
    }
}

struct FileVisitor;

impl<'de> Visitor<'de> for FileVisitor {
    type Value = RawFile;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object with `users`, `num_samples` and `user_data`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawFile, A::Error> {
        let mut raw = RawFile {
            users: None,
            num_samples: None,
            hierarchies: None,
            user_data: None,
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "users" => raw.users = Some(map.next_value()?),
                "num_samples" => raw.num_samples = Some(map.next_value()?),
                "hierarchies" => {
                    let h: Vec<serde_json::Value> = map.next_value()?;
                    raw.hierarchies = Some(
                        h.into_iter()
                            .map(|v| match v {
                                serde_json::Value::String(s) => Some(s),
                                other => Some(other.to_string()),
                            })
                            .collect(),
                    );
                }
                "user_data" => raw.user_data = Some(map.next_value_seed(UserDataSeed)?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(raw)
    }
}

struct UserDataSeed;

impl<'de> DeserializeSeed<'de> for UserDataSeed {
    type Value = Vec<(String, LeafSamples)>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for UserDataSeed {
    type Value = Vec<(String, LeafSamples)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of users")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut users = Vec::new();
        while let Some(id) = map.next_key::<String>()? {
            let samples = map.next_value_seed(UserSeed { id: &id })?;
            users.push((id, samples));
        }
        Ok(users)
    }
}

/// One user's `{"x": [...], "y": [...]}`.
struct UserSeed<'a> {
    id: &'a str,
}

impl<'de> DeserializeSeed<'de> for UserSeed<'_> {
    type Value = LeafSamples;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for UserSeed<'_> {
    type Value = LeafSamples;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "user `{}`'s object with `x` and `y`", self.id)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LeafSamples, A::Error> {
        let id = self.id;
        let (mut x, mut y) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "x" => x = Some(map.next_value_seed(InputsSeed { id })?),
                "y" => y = Some(map.next_value_seed(LabelsSeed { id })?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let fail = |why: String| de::Error::custom(format!("user `{id}`: {why}"));
        let x = x.ok_or_else(|| fail("no `x`".into()))?;
        let y: Labels = y.ok_or_else(|| fail("no `y`".into()))?;
        if x.len() != y.values.len() {
            return Err(fail(format!(
                "{} inputs in `x` but {} labels in `y`",
                x.len(),
                y.values.len()
            )));
        }
        match x {
            Inputs::Text(mut t) => {
                if !y.values.is_empty() && !y.text {
                    return Err(fail("text inputs with numeric labels".into()));
                }
                t.labels = y.values.iter().map(|&v| v as u8).collect();
                Ok(LeafSamples::Text(t))
            }
            Inputs::Features { dim, x } => {
                if y.text {
                    return Err(fail("numeric inputs with character labels".into()));
                }
                Ok(LeafSamples::Features {
                    dim,
                    x,
                    y: y.values,
                })
            }
        }
    }
}

/// Decoded `x`: text windows (labels filled in from `y`) or features.
enum Inputs {
    Text(TextSamples),
    Features { dim: usize, x: Vec<f32> },
}

impl Inputs {
    fn len(&self) -> usize {
        match self {
            Inputs::Text(t) => t.len(),
            Inputs::Features { dim, x } => x.len() / (*dim).max(1),
        }
    }
}

struct InputsSeed<'a> {
    id: &'a str,
}

impl<'de> DeserializeSeed<'de> for InputsSeed<'_> {
    type Value = Inputs;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for InputsSeed<'_> {
    type Value = Inputs;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "user `{}`'s `x`: a list of strings or of number lists",
            self.id
        )
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Inputs, A::Error> {
        let mut inputs: Option<Inputs> = None;
        let mut window = Vec::new();
        let mut j = 0usize;
        while let Some(input) = seq.next_element_seed(InputSeed {
            id: self.id,
            index: j,
            window: &mut window,
        })? {
            let fail =
                |why: String| de::Error::custom(format!("user `{}`: x[{j}]: {why}", self.id));
            match (&mut inputs, input) {
                (None, Input::Text) => {
                    let mut t = TextSamples::new(window.len());
                    t.push(&window, 0);
                    inputs = Some(Inputs::Text(t));
                }
                (None, Input::Numbers(values)) => {
                    inputs = Some(Inputs::Features {
                        dim: values.len(),
                        x: values,
                    });
                }
                (Some(Inputs::Text(t)), Input::Text) => {
                    if window.len() != t.seq_len {
                        return Err(fail(format!(
                            "{} characters where x[0] has {}",
                            window.len(),
                            t.seq_len
                        )));
                    }
                    t.push(&window, 0);
                }
                (Some(Inputs::Features { dim, x }), Input::Numbers(values)) => {
                    if values.len() != *dim {
                        return Err(fail(format!(
                            "{} values where x[0] has {dim}",
                            values.len()
                        )));
                    }
                    x.extend(values);
                }
                _ => return Err(fail("strings and number lists mixed".into())),
            }
            j += 1;
        }
        Ok(inputs.unwrap_or(Inputs::Text(TextSamples::new(0))))
    }
}

/// One element of `x`: a string (decoded into the seed's window buffer) or a
/// list of numbers.
enum Input {
    Text,
    Numbers(Vec<f32>),
}

struct InputSeed<'a, 'w> {
    id: &'a str,
    index: usize,
    window: &'w mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for InputSeed<'_, '_> {
    type Value = Input;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for InputSeed<'_, '_> {
    type Value = Input;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "user `{}`'s x[{}]: a string or a list of numbers",
            self.id, self.index
        )
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Input, E> {
        self.window.clear();
        for c in s.chars() {
            let id = symbol(c).ok_or_else(|| {
                E::custom(format!(
                    "user `{}`: x[{}]: character {c:?} is not in LEAF's 80-symbol alphabet",
                    self.id, self.index
                ))
            })?;
            self.window.push(id);
        }
        if self.window.is_empty() {
            return Err(E::custom(format!(
                "user `{}`: x[{}] is empty",
                self.id, self.index
            )));
        }
        Ok(Input::Text)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Input, A::Error> {
        let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(v) = seq.next_element::<f64>()? {
            if !v.is_finite() {
                return Err(de::Error::custom(format!(
                    "user `{}`: x[{}]: non-finite value",
                    self.id, self.index
                )));
            }
            values.push(v as f32);
        }
        Ok(Input::Numbers(values))
    }
}

/// Decoded `y`: class indices, and whether they came from characters.
struct Labels {
    values: Vec<u32>,
    text: bool,
}

struct LabelsSeed<'a> {
    id: &'a str,
}

impl<'de> DeserializeSeed<'de> for LabelsSeed<'_> {
    type Value = Labels;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for LabelsSeed<'_> {
    type Value = Labels;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "user `{}`'s `y`: a list of characters or class indices",
            self.id
        )
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Labels, A::Error> {
        let mut labels = Labels {
            values: Vec::new(),
            text: false,
        };
        let mut j = 0usize;
        while let Some(label) = seq.next_element::<LabelValue>()? {
            let fail =
                |why: String| de::Error::custom(format!("user `{}`: y[{j}]: {why}", self.id));
            let (value, text) = match label {
                LabelValue::Char(s) => {
                    let mut chars = s.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => match symbol(c) {
                            Some(id) => (u32::from(id), true),
                            None => {
                                return Err(fail(format!(
                                    "character {c:?} is not in LEAF's 80-symbol alphabet"
                                )));
                            }
                        },
                        _ => return Err(fail(format!("{s:?} is not one character"))),
                    }
                }
                LabelValue::Class(v)
                    if v >= 0.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX) =>
                {
                    (v as u32, false)
                }
                LabelValue::Class(v) => return Err(fail(format!("{v} is not a class index"))),
            };
            if j > 0 && text != labels.text {
                return Err(fail("characters and numbers mixed".into()));
            }
            labels.text = text;
            labels.values.push(value);
            j += 1;
        }
        debug_assert!(!labels.text || labels.values.iter().all(|&v| (v as usize) < SYMBOLS));
        Ok(labels)
    }
}

/// A label as written: a one-character string or a number.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum LabelValue {
    Char(String),
    Class(f64),
}
