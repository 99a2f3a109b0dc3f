package testenv

import (
	"github.com/tabwarden/tabwarden/internal/browser/browsertest"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// ReadingPage is what the fixture's /reading page shows, for the conformance
// suite's outline case (browsertest.Reading) in every driver's world.
func ReadingPage() browsertest.ReadingPage {
	return browsertest.ReadingPage{
		Subject: fixture.ReadingSubject, Body: fixture.ReadingBody,
		Hidden: fixture.ReadingHidden, Older: fixture.ReadingOlder, Item: fixture.ReadingItem,
		Archived: fixture.TitleArchived,
	}
}
