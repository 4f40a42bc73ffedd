//! One pass of [`TfCifarCnn`] over images the network sees (after the input
//! stage): the forward pass to the logits, the loss against label-smoothed
//! targets, and when asked the backward pass into the flat gradient.

use fedcluster_core::Workspace;
use fedcluster_core::train::smoothing::smoothed_cross_entropy;

use super::lrn::TF_CIFAR;
use super::{TfCifarCnn, pool};
use crate::cnn::conv_path::ConvPath;
use crate::cnn::layers::{bias_relu, dense, input_grad, relu_backward, weight_grad};
use crate::logistic::{bias_grad, count_argmax_matches};

/// Where a pass's images come from.
pub(super) enum Images<'a> {
    /// Raw images, through the evaluation stage.
    Raw(&'a [f32]),
    /// Images already through the (training) stage.
    Staged(&'a [f32]),
}

impl TfCifarCnn {
    /// The mean loss over `y` and the number classified right, with the
    /// loss's gradient written into `grad` when given.
    pub(super) fn pass(
        &self,
        params: &[f32],
        images: Images<'_>,
        y: &[u32],
        grad: Option<&mut [f32]>,
        ws: &mut Workspace,
    ) -> (f64, usize) {
        let n = y.len();
        let (h, w) = self.stage.size;
        let (f, k) = (self.filters, self.classes);
        let (c1, c2) = self.convs();
        // The second convolution (`f` channels in) by Winograd where it wins.
        let (path1, path2) = (ConvPath::choose(&c1, f, 1), ConvPath::choose(&c2, f, 1));
        let ((h1, _), (w1, _)) = (pool::out_and_pad(h), pool::out_and_pad(w));
        let (big, mid, flat) = (n * h * w * f, n * h1 * w1 * f, n * self.flat());
        let (d1, d2) = (n * self.dense1, n * self.dense2);
        let back = |len: usize| if grad.is_some() { len } else { 0 };
        let [
            x,
            scratch,
            a1,
            p1,
            idx1,
            s1,
            l1,
            a2,
            s2,
            l2,
            p2,
            idx2,
            hid1,
            hid2,
            z,
            dz,
            dh2,
            dh1,
            dp2,
            dl2,
            da2,
            dl1,
            da1,
            t,
        ] = ws.slices([
            n * self.stage.net_dim(),
            path1
                .scratch_len(&c1, f, n)
                .max(path2.scratch_len(&c2, f, n)),
            big,
            mid,
            mid,
            mid,
            mid,
            mid,
            mid,
            mid,
            flat,
            flat,
            d1,
            d2,
            n * k,
            n * k,
            back(d2),
            back(d1),
            back(flat),
            back(mid),
            back(mid),
            back(mid),
            back(big),
            back(f),
        ]);
        match images {
            Images::Raw(raw) => {
                let (rd, nd) = (self.stage.raw_dim(), self.stage.net_dim());
                for (s, d) in raw.chunks_exact(rd).zip(x.chunks_exact_mut(nd)) {
                    self.stage.eval(s, d);
                }
            }
            Images::Staged(staged) => x.copy_from_slice(staged),
        }
        let l = self.layout();
        // Forward: conv1, ReLU, pool1, norm1, conv2, ReLU, norm2, pool2, the
        // two ReLU dense layers, the logits.
        path1.forward(&c1, x, &params[..l.b1], n, scratch, a1);
        bias_relu(a1, &params[l.b1..l.w2]);
        pool::forward(h, w, f, n, a1, p1, idx1);
        TF_CIFAR.forward(p1, f, l1, s1);
        path2.forward(&c2, l1, &params[l.w2..l.b2], n, scratch, a2);
        bias_relu(a2, &params[l.b2..l.w3]);
        TF_CIFAR.forward(a2, f, l2, s2);
        pool::forward(h1, w1, f, n, l2, p2, idx2);
        dense(hid1, p2, &params[l.w3..l.b3], self.flat(), 1.0);
        bias_relu(hid1, &params[l.b3..l.w4]);
        dense(hid2, hid1, &params[l.w4..l.b4], self.dense1, 1.0);
        bias_relu(hid2, &params[l.b4..l.w5]);
        dense(z, hid2, &params[l.w5..l.b5], self.dense2, 1.0);
        for row in z.chunks_exact_mut(k) {
            row.iter_mut()
                .zip(&params[l.b5..])
                .for_each(|(v, b)| *v += b);
        }
        let correct = count_argmax_matches(z, k, y);
        let loss = smoothed_cross_entropy(z, y, k, self.label_smoothing, dz);
        let Some(grad) = grad else {
            return (loss, correct);
        };
        // Backward (dz is already divided by n).
        weight_grad(&mut grad[l.w5..l.b5], dz, hid2, n, 1.0);
        bias_grad(dz, k, 0, 1.0, &mut grad[l.b5..]);
        input_grad(dh2, dz, &params[l.w5..l.b5], n, 1.0);
        relu_backward(dh2, hid2);
        weight_grad(&mut grad[l.w4..l.b4], dh2, hid1, n, 1.0);
        bias_grad(dh2, self.dense2, 0, 1.0, &mut grad[l.b4..l.w5]);
        input_grad(dh1, dh2, &params[l.w4..l.b4], n, 1.0);
        relu_backward(dh1, hid1);
        weight_grad(&mut grad[l.w3..l.b3], dh1, p2, n, 1.0);
        bias_grad(dh1, self.dense1, 0, 1.0, &mut grad[l.b3..l.w4]);
        input_grad(dp2, dh1, &params[l.w3..l.b3], n, 1.0);
        pool::backward(h1, w1, f, n, dp2, idx2, dl2);
        TF_CIFAR.backward(dl2, a2, l2, s2, f, t, da2);
        relu_backward(da2, a2);
        let (w2, g2) = (&params[l.w2..l.b2], &mut grad[l.w2..l.b2]);
        path2.backward(&c2, l1, da2, w2, n, 1.0, scratch, g2, Some(&mut *dl1));
        bias_grad(da2, f, 0, 1.0, &mut grad[l.b2..l.w3]);
        let dp1 = dl2; // free again, and of norm1's size
        TF_CIFAR.backward(dl1, p1, l1, s1, f, t, dp1);
        pool::backward(h, w, f, n, dp1, idx1, da1);
        relu_backward(da1, a1);
        let (w1, g1) = (&params[..l.b1], &mut grad[..l.b1]);
        path1.backward(&c1, x, da1, w1, n, 1.0, scratch, g1, None);
        bias_grad(da1, f, 0, 1.0, &mut grad[l.b1..l.w2]);
        (loss, correct)
    }
}
