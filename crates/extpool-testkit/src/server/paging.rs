//! Cursor pagination for the list methods (`--page-size`).
//!
//! The cursor is the decimal offset of the next item. It is opaque to
//! clients; a cursor this server did not hand out is refused with
//! `invalid_params`, as the MCP specification asks.

use rmcp::ErrorData;

/// Cuts one page out of `items`: the items from `cursor` on (at most
/// `page_size` of them) and the cursor of the next page, if any.
pub(crate) fn page<T>(
    items: Vec<T>,
    cursor: Option<&str>,
    page_size: Option<usize>,
) -> Result<(Vec<T>, Option<String>), ErrorData> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|&n| n <= items.len())
            .ok_or_else(|| ErrorData::invalid_params(format!("invalid cursor {c:?}"), None))?,
    };
    let Some(size) = page_size.filter(|&s| s > 0) else {
        return Ok((items.into_iter().skip(start).collect(), None));
    };
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((
        items.into_iter().skip(start).take(end - start).collect(),
        next,
    ))
}

/// A server that pages wrongly (`--paging-fault`), so clients can prove
/// they bound their listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PagingFault {
    /// Every page gives a new next cursor: the list never ends.
    Endless,
    /// Every page gives the same next cursor, `same`.
    Repeat,
}

/// [`page`], or the faulty page of `fault`: the first page's items (at
/// most `page_size`) and a next cursor on every page — the page number
/// after the cursor's (`Endless`), or always `same` (`Repeat`).
pub(crate) fn page_with_fault<T>(
    items: Vec<T>,
    cursor: Option<&str>,
    page_size: Option<usize>,
    fault: Option<PagingFault>,
) -> Result<(Vec<T>, Option<String>), ErrorData> {
    let Some(fault) = fault else {
        return page(items, cursor, page_size);
    };
    let size = page_size.filter(|&s| s > 0).unwrap_or(items.len());
    let next = match fault {
        PagingFault::Endless => {
            let n = cursor.and_then(|c| c.parse::<u64>().ok()).unwrap_or(0);
            n.saturating_add(1).to_string()
        }
        PagingFault::Repeat => "same".to_owned(),
    };
    Ok((items.into_iter().take(size).collect(), Some(next)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_walk_every_item_once() {
        let items: Vec<u32> = (0..7).collect();
        let (p1, c1) = page(items.clone(), None, Some(3)).unwrap();
        assert_eq!(p1, vec![0, 1, 2]);
        let (p2, c2) = page(items.clone(), c1.as_deref(), Some(3)).unwrap();
        assert_eq!(p2, vec![3, 4, 5]);
        let (p3, c3) = page(items.clone(), c2.as_deref(), Some(3)).unwrap();
        assert_eq!(p3, vec![6]);
        assert_eq!(c3, None);
    }

    #[test]
    fn no_page_size_means_one_page() {
        let (all, next) = page(vec![1, 2, 3], None, None).unwrap();
        assert_eq!(all, vec![1, 2, 3]);
        assert_eq!(next, None);
    }

    #[test]
    fn faulty_pages_never_end() {
        let fault = Some(PagingFault::Endless);
        let (p1, c1) = page_with_fault(vec![1, 2, 3], None, Some(2), fault).unwrap();
        assert_eq!((p1, c1.as_deref()), (vec![1, 2], Some("1")));
        let (_, c2) = page_with_fault(vec![1, 2, 3], c1.as_deref(), Some(2), fault).unwrap();
        assert_eq!(c2.as_deref(), Some("2"));
        let fault = Some(PagingFault::Repeat);
        let (all, same) = page_with_fault(vec![1, 2, 3], Some("same"), None, fault).unwrap();
        assert_eq!((all, same.as_deref()), (vec![1, 2, 3], Some("same")));
    }

    #[test]
    fn foreign_cursors_are_refused() {
        assert!(page(vec![1, 2, 3], Some("x"), Some(1)).is_err());
        assert!(page(vec![1, 2, 3], Some("99"), Some(1)).is_err());
    }
}
