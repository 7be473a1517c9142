//! What a cached resource gives up for the memory budget, level by level
//! (`crate::budget` decides; reads and the store's writer obey).

/// What a resource gives up for the budget; each level includes the ones below.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Pressure {
    /// Within budget: everything as configured.
    #[default]
    Normal = 0,
    /// The event log is held shorter than `--max-events`.
    ShortLog = 1,
    /// No new continue-token pins: pages that would pin pass through.
    NoPins = 2,
    /// Lists and GETs pass through.
    PassThrough = 3,
}

impl Pressure {
    /// The level stored as `v` (`level as u8`).
    pub fn from_u8(v: u8) -> Pressure {
        match v {
            0 => Pressure::Normal,
            1 => Pressure::ShortLog,
            2 => Pressure::NoPins,
            _ => Pressure::PassThrough,
        }
    }

    /// Whether new continue-token pins are refused.
    pub fn refuses_pins(self) -> bool {
        self >= Pressure::NoPins
    }

    /// Whether lists and GETs pass through.
    pub fn passes_through(self) -> bool {
        self == Pressure::PassThrough
    }

    pub(crate) fn up(self) -> Pressure {
        Pressure::from_u8(self as u8 + 1)
    }

    pub(crate) fn down(self) -> Pressure {
        Pressure::from_u8((self as u8).saturating_sub(1))
    }

    /// What the level does, for the log.
    pub(crate) fn effect(self) -> &'static str {
        match self {
            Pressure::Normal => "the event log keeps --max-events again",
            Pressure::ShortLog => "the event log is held shorter",
            Pressure::NoPins => "no new continue-token pins: paged lists pass through",
            Pressure::PassThrough => "lists and GETs pass through",
        }
    }
}
