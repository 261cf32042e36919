//! The currencies an order may be in: the active ISO 4217 codes (list one, funds codes and
//! precious metals excluded). Three upper-case letters are not enough: `ABC` passes that and
//! every provider refuses it, and a refusal the pipeline could have seen must not reach the
//! payment API, where it would look like an API that refuses every order.

/// Active ISO 4217 alphabetic codes, sorted.
const ISO_4217: &[&str] = &[
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT",
    "BGN", "BHD", "BIF", "BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD",
    "CDF", "CHF", "CLP", "CNY", "COP", "CRC", "CUP", "CVE", "CZK", "DJF", "DKK", "DOP", "DZD",
    "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP", "GMD", "GNF", "GTQ",
    "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IQD", "IRR", "ISK", "JMD", "JOD",
    "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD", "KYD", "KZT", "LAK", "LBP", "LKR",
    "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR",
    "MWK", "MXN", "MYR", "MZN", "NAD", "NGN", "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN",
    "PGK", "PHP", "PKR", "PLN", "PYG", "QAR", "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR",
    "SDG", "SEK", "SGD", "SHP", "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB",
    "TJS", "TMT", "TND", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "UYU", "UZS",
    "VED", "VES", "VND", "VUV", "WST", "XAF", "XCD", "XCG", "XOF", "XPF", "YER", "ZAR", "ZMW",
    "ZWG",
];

/// True for an active ISO 4217 code.
pub(super) fn is_iso_4217(code: &str) -> bool {
    ISO_4217.binary_search(&code).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_and_holds_only_codes() {
        assert!(ISO_4217.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(
            ISO_4217
                .iter()
                .all(|code| code.len() == 3 && code.bytes().all(|b| b.is_ascii_uppercase()))
        );
        for code in ["EUR", "USD", "JPY", "CHF", "GBP"] {
            assert!(is_iso_4217(code), "{code}");
        }
        for code in ["ABC", "XXX", "EU", "eur"] {
            assert!(!is_iso_4217(code), "{code}");
        }
    }
}
