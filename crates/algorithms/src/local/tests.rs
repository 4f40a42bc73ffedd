//! Local training: the server only keeps each client's latest model.

use fedcluster_core::{
    Batch, ClientEnv, ClientHalf, Purpose, RoundCtx, ServerHalf, Targets, Workspace, stream,
};
use fedcluster_models::LinearRegression;

use super::{Config, LocalClient, LocalServer, TrainLocally};
use crate::common::checked::Checked;
use crate::common::init::InitScheme;

#[test]
fn clients_keep_training_their_own_model_and_the_server_records_it() {
    let model = LinearRegression::new(1).unwrap();
    let config = Checked::new(Config {
        lr: 0.1,
        local_steps: 50,
        participation: 1.0,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
        round_schedule: None,
    })
    .unwrap();
    let mut server = LocalServer::new(config, &model, 2);
    let xs = [1.0f32, 2.0, 3.0];
    let ys = [[3.0f32, 6.0, 9.0], [-1.0, -2.0, -3.0]];
    let mut clients = vec![LocalClient::new(0.05, 50, InitScheme::Zeros); 2];
    let mut ws = Workspace::default();
    for round in 0..4 {
        let ctx = RoundCtx {
            round,
            rounds: 4,
            num_clients: 2,
        };
        let plan = server
            .plan(&ctx, &mut stream(1, Purpose::Server, round as u64, 0))
            .unwrap();
        let replies = plan
            .iter()
            .map(|(id, msg): &(usize, TrainLocally)| {
                let mut env = ClientEnv {
                    id: *id,
                    round: 0,
                    data: Batch::new(&xs, Targets::Real(&ys[*id]), 1).unwrap(),
                    model: &model,
                    rng: stream(1, Purpose::Client, round as u64, *id as u64),
                    ws: &mut ws,
                };
                (*id, clients[*id].handle(&ctx, msg, &mut env).unwrap())
            })
            .collect();
        server.absorb(&ctx, replies).unwrap();
    }
    let snap = server.snapshot();
    let view = &snap.replicas[0];
    assert_eq!(view.assignment, &[Some(0), Some(1)]);
    assert!(
        (view.models[0][0] - 3.0).abs() < 1e-3,
        "{:?}",
        view.models[0]
    );
    assert!(
        (view.models[1][0] + 1.0).abs() < 1e-3,
        "{:?}",
        view.models[1]
    );
}
