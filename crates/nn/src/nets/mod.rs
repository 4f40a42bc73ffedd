//! The architectures: [`Mlp`], [`Cnn`] (the IFCA CNN and its CIFAR
//! variant, LEAF's FEMNIST CNN), [`ResNet9`], [`CharLstm`].

mod char_lstm;
mod cnn;
mod mlp;
mod resnet9;

pub use char_lstm::CharLstm;
pub use cnn::Cnn;
pub use mlp::Mlp;
pub use resnet9::ResNet9;

#[cfg(test)]
mod tests;
