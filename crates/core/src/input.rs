//! What a model sees of one sample, as a data set declares it: the features'
//! count, their image shape when they are images, and what the targets mean.
//! Models are built from an [`Input`], never from guessed shapes.

use serde::{Deserialize, Serialize};

/// The shape of a model's input images, channels-last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageShape {
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// Channels.
    pub channels: usize,
}

/// What the targets mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// Real targets, squared loss.
    Regression,
    /// Class targets in `0..classes`.
    Classification {
        /// Number of classes.
        classes: usize,
    },
}

/// One sample's input as a model is built for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Input {
    /// Features per sample.
    pub dim: usize,
    /// The features' image shape (channels-last, `height * width * channels
    /// == dim`), when the data set declares its samples to be images.
    pub image: Option<ImageShape>,
    /// What the targets mean.
    pub task: Task,
}

impl Input {
    /// Features that are not declared to be images.
    pub fn flat(dim: usize, task: Task) -> Self {
        Self {
            dim,
            image: None,
            task,
        }
    }

    /// Images of `shape`.
    pub fn images(shape: ImageShape, task: Task) -> Self {
        Self {
            dim: shape.height * shape.width * shape.channels,
            image: Some(shape),
            task,
        }
    }
}
