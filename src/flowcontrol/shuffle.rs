//! Shuffle sharding, ported from `k8s.io/apiserver/pkg/util/shufflesharding/shufflesharding.go`:
//! a flow's hash deals it a hand of `hand_size` distinct queues out of
//! `deck_size`, so two flows rarely share a whole hand.
//!
//! Invariant: the hand is a pure function of the hash, and its cards are
//! distinct and below `deck_size` (the `Dealer` refuses a deck and hand the
//! hash's 60 bits cannot deal, with the apiserver's messages).

/// At most this many bits of a hash are dealt from (`MaxHashBits`).
const MAX_HASH_BITS: u32 = 60;

/// Why a deck and hand cannot be dealt (`NewDealer`'s refusals, in its words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DealerError {
    /// The deck or the hand is empty or negative.
    #[error("deckSize {deck_size} or handSize {hand_size} is not positive")]
    NotPositive { deck_size: i64, hand_size: i64 },
    /// The hand holds more cards than the deck.
    #[error("handSize {hand_size} is greater than deckSize {deck_size}")]
    HandOverDeck { deck_size: i64, hand_size: i64 },
    /// The deck is over 2^26 cards.
    #[error("deckSize {deck_size} is impractically large")]
    DeckTooLarge { deck_size: i64 },
    /// Dealing the hand needs more bits than a hash gives.
    #[error("required entropy bits of deckSize {deck_size} and handSize {hand_size} is greater than {MAX_HASH_BITS}")]
    TooFewHashBits { deck_size: i64, hand_size: i64 },
}

/// Deals hands of `hand_size` cards from a deck of `deck_size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dealer {
    deck_size: u64,
    hand_size: usize,
}

/// `RequiredEntropyBits`.
fn required_entropy_bits(deck_size: u64, hand_size: usize) -> u32 {
    ((deck_size as f64).log2() * hand_size as f64).ceil() as u32
}

impl Dealer {
    /// `NewDealer`, with its refusals.
    pub fn new(deck_size: i64, hand_size: i64) -> Result<Dealer, DealerError> {
        if deck_size <= 0 || hand_size <= 0 {
            return Err(DealerError::NotPositive { deck_size, hand_size });
        }
        if hand_size > deck_size {
            return Err(DealerError::HandOverDeck { deck_size, hand_size });
        }
        if deck_size > 1 << 26 {
            return Err(DealerError::DeckTooLarge { deck_size });
        }
        if required_entropy_bits(deck_size as u64, hand_size as usize) > MAX_HASH_BITS {
            return Err(DealerError::TooFewHashBits { deck_size, hand_size });
        }
        Ok(Dealer { deck_size: deck_size as u64, hand_size: hand_size as usize })
    }

    /// `DealIntoHand`: the cards `hash` deals, in the order dealt.
    pub(crate) fn deal(&self, mut hash: u64) -> Vec<usize> {
        let mut remainders = Vec::with_capacity(self.hand_size);
        for i in 0..self.hand_size as u64 {
            let next = hash / (self.deck_size - i);
            remainders.push((hash - (self.deck_size - i) * next) as usize);
            hash = next;
        }
        let hand: Vec<usize> = (0..self.hand_size)
            .map(|i| {
                let mut card = remainders[i];
                for j in (1..=i).rev() {
                    if card >= remainders[j - 1] {
                        card += 1;
                    }
                }
                card
            })
            .collect();
        debug_assert!(
            hand.iter().enumerate().all(|(i, c)| (*c as u64) < self.deck_size && !hand[..i].contains(c)),
            "a hand's cards are distinct cards of the deck: {hand:?}"
        );
        hand
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_and_refusals_are_the_apiservers() {
        assert_eq!(required_entropy_bits(1024, 6), 60);
        assert_eq!(required_entropy_bits(512, 8), 72);
        let refused = |d, h| Dealer::new(d, h).unwrap_err().to_string();
        assert_eq!(refused(-100, 8), "deckSize -100 or handSize 8 is not positive");
        assert_eq!(refused(100, 0), "deckSize 100 or handSize 0 is not positive");
        assert_eq!(refused(100, 101), "handSize 101 is greater than deckSize 100");
        assert_eq!(refused(1 << 27, 2), "deckSize 134217728 is impractically large");
        assert_eq!(refused(512, 8), "required entropy bits of deckSize 512 and handSize 8 is greater than 60");
        assert!(Dealer::new(1024, 6).is_ok());
    }

    // `TestCardDuplication` and `TestUniformDistribution` of shufflesharding_test.go, by seeded hashes.
    #[test]
    fn a_hand_holds_distinct_cards_of_the_deck() {
        for (deck, hand) in [(4, 4), (8, 8), (10, 10), (12, 12), (128, 8), (256, 7), (512, 6)] {
            let dealer = Dealer::new(deck, hand).unwrap();
            for seed in 0..200u64 {
                let cards = dealer.deal(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let mut sorted = cards.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), hand as usize, "{cards:?}");
                assert!(cards.iter().all(|c| *c < deck as usize));
            }
        }
    }

    #[test]
    fn cards_are_dealt_as_the_go_code_deals_them() {
        // deck 8, hand 3, hash 100: remainders 100%8=4, 12%7=5, 1%6=1 → 4, 5→(5≥4)+1=6, 1→1.
        assert_eq!(Dealer::new(8, 3).unwrap().deal(100), [4, 6, 1]);
    }
}
