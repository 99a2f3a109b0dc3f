package wire

// The page's history: Back, Forward and Reload steps.

// GetNavigationHistory is Page.getNavigationHistory.
type GetNavigationHistory struct{}

// NavigationEntry is one entry of a page's history.
type NavigationEntry struct {
	ID  int64  `json:"id"`
	URL string `json:"url"`
}

// GetNavigationHistoryResult is the reply of Page.getNavigationHistory.
type GetNavigationHistoryResult struct {
	CurrentIndex int               `json:"currentIndex"`
	Entries      []NavigationEntry `json:"entries"`
}

func (GetNavigationHistory) Method() string { return "Page.getNavigationHistory" }
func (GetNavigationHistory) result() GetNavigationHistoryResult {
	return GetNavigationHistoryResult{}
}

// NavigateToHistoryEntry is Page.navigateToHistoryEntry.
type NavigateToHistoryEntry struct {
	EntryID int64 `json:"entryId"`
}

func (NavigateToHistoryEntry) Method() string { return "Page.navigateToHistoryEntry" }
func (NavigateToHistoryEntry) result() Empty  { return Empty{} }

// Reload is Page.reload.
type Reload struct{}

func (Reload) Method() string { return "Page.reload" }
func (Reload) result() Empty  { return Empty{} }
