//! The streaming parse of one LEAF JSON file: serde visitors that decode each
//! user's samples into their compact form as they are read (text windows
//! into [`TextSamples`], feature rows into one flat vector), never holding a
//! JSON value per sample. What the parts mean together is checked by
//! [`RawFile::check`](super::RawFile).

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{LeafSamples, RawFile};
use crate::leaf::alphabet::{SYMBOLS, symbol};
use crate::leaf::samples::TextSamples;

pub(super) struct FileVisitor;

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
