//! How fast a replay plays: recorded time times a factor, or as fast as frames come.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speed {
    X1,
    X2,
    X10,
    /// As fast as frames can be derived and drawn.
    Max,
}

impl Speed {
    const ALL: [Speed; 4] = [Speed::X1, Speed::X2, Speed::X10, Speed::Max];

    pub fn label(self) -> &'static str {
        match self {
            Speed::X1 => "1x",
            Speed::X2 => "2x",
            Speed::X10 => "10x",
            Speed::Max => "max",
        }
    }

    pub(super) fn factor(self) -> Option<f64> {
        match self {
            Speed::X1 => Some(1.0),
            Speed::X2 => Some(2.0),
            Speed::X10 => Some(10.0),
            Speed::Max => None,
        }
    }

    pub fn faster(self) -> Speed {
        let i = Self::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Self::ALL[(i + 1).min(Self::ALL.len() - 1)]
    }

    pub fn slower(self) -> Speed {
        let i = Self::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Self::ALL[i.saturating_sub(1)]
    }
}
