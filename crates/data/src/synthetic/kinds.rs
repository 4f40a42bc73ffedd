//! The synthetic rows of the data-set table: `kind = "ifca-synthetic"` and
//! `kind = "mixed-regression"`, their clients generated on demand.

use super::{
    IfcaSyntheticSpec, MixedRegressionSpec, ifca_synthetic_on_demand, mixed_regression_on_demand,
};
use crate::data_set::DataSet;
use crate::error::Result;
use crate::table::DataKind;

/// `kind = "ifca-synthetic"`: [`IfcaSyntheticSpec`], its clients generated on
/// demand.
pub struct IfcaSynthetic;

impl DataKind for IfcaSynthetic {
    type Spec = IfcaSyntheticSpec;

    fn validate(spec: &Self::Spec) -> Result<()> {
        spec.validate()
    }

    fn build(spec: &Self::Spec, seed: u64) -> Result<DataSet> {
        ifca_synthetic_on_demand(spec, seed).map(DataSet::Generated)
    }
}

/// `kind = "mixed-regression"`: [`MixedRegressionSpec`], its clients generated
/// on demand.
pub struct MixedRegression;

impl DataKind for MixedRegression {
    type Spec = MixedRegressionSpec;

    fn validate(spec: &Self::Spec) -> Result<()> {
        spec.validate()
    }

    fn build(spec: &Self::Spec, seed: u64) -> Result<DataSet> {
        mixed_regression_on_demand(spec, seed).map(DataSet::Generated)
    }
}
