//! [`DataSet`]: the kinds of data set a run holds (every client stored,
//! clients generated on demand, image clusters transformed on demand), each
//! seen through its [`DataView`].

use crate::dataset::FederatedData;
use crate::images::ImageClustersData;
use crate::synthetic::on_demand::GeneratedData;
use crate::view::DataView;

/// A data set held in memory, or generated client by client when asked.
pub enum DataSet {
    /// Every client's samples in memory.
    Stored(FederatedData),
    /// Clients regenerated from their random streams on demand.
    Generated(GeneratedData),
    /// An image cluster partition, its training clients transformed on
    /// demand.
    Images(Box<ImageClustersData>),
}

impl DataSet {
    /// The data set as a run sees it.
    pub fn view(&self) -> DataView<'_> {
        match self {
            DataSet::Stored(data) => data.view(),
            DataSet::Generated(data) => data.view(),
            DataSet::Images(data) => data.view(),
        }
    }
}
