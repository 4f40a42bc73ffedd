//! The architectures: [`Mlp`], [`Cnn`] (the IFCA CNN and its CIFAR
//! variant, LEAF's FEMNIST CNN), [`ResNet9`], [`CharLstm`]; beside each, its
//! `[model]` config and the build from the data's [`fedcluster_core::Input`]:
//! [`MlpConfig`], [`CnnConfig`], [`CnnCifarConfig`], [`CnnFemnistConfig`],
//! [`ResNet9Config`], [`CharLstmConfig`]; and [`CnnIfcaCifarConfig`], the
//! IFCA code's CIFAR-10 network (native only, `fedcluster_models::TfCifarCnn`).

mod char_lstm;
mod cnn;
mod ifca_cifar;
mod mlp;
mod resnet9;

pub use char_lstm::{CharLstm, CharLstmConfig};
pub use cnn::{Cnn, CnnCifarConfig, CnnConfig, CnnFemnistConfig};
pub use ifca_cifar::{CnnIfcaCifarConfig, NormalizeConfig};
pub use mlp::{Mlp, MlpConfig};
pub use resnet9::{ResNet9, ResNet9Config};

#[cfg(test)]
mod tests;
