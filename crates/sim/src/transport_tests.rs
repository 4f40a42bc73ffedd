use std::thread::sleep;
use std::time::Duration;

use fedcluster_core::model::{Batch, Targets};
use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, ClientId, Message, RoundCtx};
use fedcluster_models::LinearRegression;

use super::{InProcess, Transport};

/// The server's message: nothing.
struct Go;

/// A client's reply: the pool thread that ran it.
struct RanOn(Option<usize>);

impl Message for Go {
    fn wire_bytes(&self) -> u64 {
        0
    }
    fn is_finite(&self) -> bool {
        true
    }
}

impl Message for RanOn {
    fn wire_bytes(&self) -> u64 {
        0
    }
    fn is_finite(&self) -> bool {
        true
    }
}

/// A client that works for `millis` and says where it ran.
#[derive(Clone)]
struct Busy {
    millis: u64,
}

impl ClientHalf for Busy {
    type Down = Go;
    type Up = RanOn;

    fn handle(&mut self, _: &RoundCtx, _: &Go, _: &mut ClientEnv<'_>) -> Result<RanOn, AlgoError> {
        sleep(Duration::from_millis(self.millis));
        Ok(RanOn(rayon::current_thread_index()))
    }
}

/// The pool thread each of `clients` ran on, exchanged on two threads as
/// one plan (client `i` holding `samples[i]` samples), and the order their
/// replies came in.
fn threads_of(clients: Vec<Busy>, samples: &[usize]) -> (Vec<usize>, Vec<ClientId>) {
    let most = samples.iter().copied().max().unwrap_or(0);
    let zeros = vec![0.0f32; most];
    let data: Vec<Batch<'_>> = samples
        .iter()
        .map(|&n| Batch::new(&zeros[..n], Targets::Real(&zeros[..n]), 1).unwrap())
        .collect();
    let model = LinearRegression::new(1).unwrap();
    let n = clients.len();
    let mut transport = InProcess::new(clients, &data, &model, 1, 2).unwrap();
    let ctx = RoundCtx {
        round: 0,
        rounds: 1,
        num_clients: n,
    };
    let plan: Vec<(ClientId, Go)> = (0..n).map(|id| (id, Go)).collect();
    let mut ran_on = vec![usize::MAX; n];
    let mut order = Vec::new();
    transport
        .exchange(&ctx, &plan, &mut |id, RanOn(thread)| {
            ran_on[id] = thread.expect("ran on a pool thread");
            order.push(id);
            Ok(())
        })
        .unwrap();
    (ran_on, order)
}

#[test]
fn the_client_with_the_most_samples_starts_first_and_the_other_thread_takes_the_rest() {
    // The last client of the plan holds the most samples and takes twice as
    // long as the seven others together: started first, the thread that runs
    // it runs nothing else; taken in plan order, both threads would run small
    // clients before one reached it.
    let mut clients = vec![Busy { millis: 10 }; 8];
    clients[7].millis = 1_400;
    let mut samples = vec![1; 8];
    samples[7] = 8;
    let (ran_on, order) = threads_of(clients, &samples);
    let large = ran_on[7];
    assert!(
        ran_on[..7].iter().all(|&t| t != large),
        "client 7 ran on thread {large}, and so did others: {ran_on:?}"
    );
    assert_eq!(order, (0..8).collect::<Vec<_>>(), "replies in plan order");
}
