package v1alpha1

// Finalizers.
const (
	// SessionFinalizer lets the controller close a session's temporary windows,
	// release its Keep windows and detach its bound tabs before the session goes.
	SessionFinalizer = "tabwarden.dev/cleanup"
	// PageFinalizer lets the agent close the real page before a BrowserWindow goes.
	PageFinalizer = "tabwarden.dev/page"
)

// Labels tabwarden sets so that a label selector answers "what does this session own".
const (
	// SessionLabel names the BrowserSession a BrowserWindow belongs to.
	SessionLabel = "tabwarden.dev/session"
	// ProfileLabel names the BrowserProfile a BrowserWindow lives in, a
	// BrowserAction runs on (only its agent may claim it) and a BrowserTabList
	// lists. Only the controller sets it on windows and actions.
	ProfileLabel = "tabwarden.dev/profile"
	// SourceLabel mirrors spec.source (open, spawned, bind).
	SourceLabel = "tabwarden.dev/source"
)

// SessionRefIndex is the cache field index of BrowserWindows by
// spec.sessionRef.name, registered by both roles.
const SessionRefIndex = "spec.sessionRef.name"

// Condition types.
const (
	// ReadyCondition summarises an object: True when it is doing what its spec asks.
	ReadyCondition = "Ready"
	// RegisteredCondition says whether a session (thread, purpose, profile) or a
	// window (its session exists) is registered.
	RegisteredCondition = "Registered"
	// SpawnsAcknowledgedCondition is False on a session while a page it spawned has
	// no disposition; new Open windows are held and actions refused meanwhile.
	SpawnsAcknowledgedCondition = "SpawnsAcknowledged"
	// CleanCondition is False (reason dirty_session) while a finished or deleted
	// session still owns open pages.
	CleanCondition = "Clean"
	// OpenedCondition says whether a window's page is open in the browser.
	OpenedCondition = "Opened"
	// BoundCondition says whether a Bind window still has its user tab.
	BoundCondition = "Bound"
	// PlacedCondition says whether a Tab placement page opened in its session's
	// pinned window: True when it did, False (reason placement_not_pinned) with the
	// requested window, the actual one and why when it landed elsewhere.
	PlacedCondition = "Placed"
	// ConnectedCondition says whether a profile's agent reaches its browser.
	ConnectedCondition = "Connected"

	// ReconcilingCondition is True while tabwarden works towards what the spec
	// asks (a window opening or closing, a session cleaning up) and absent
	// otherwise: kstatus (kubectl wait, Flux, Argo CD) reads it as InProgress.
	ReconcilingCondition = "Reconciling"
	// StalledCondition is True when tabwarden cannot make progress without
	// someone changing something (a session its profile does not admit, a window
	// whose page the user closed) and absent otherwise: kstatus reads it as Failed.
	StalledCondition = "Stalled"
)

// Condition reasons. Guard reasons are snake_case and stable: the same reason
// appears in a condition, in an Event and in CLI output.
const (
	// ReasonSessionUnregistered: a session without thread and purpose, or a window
	// whose session does not exist.
	ReasonSessionUnregistered = "session_unregistered"
	// ReasonUnacknowledgedSpawns: the session has spawned windows with no disposition.
	ReasonUnacknowledgedSpawns = "unacknowledged_spawns"
	// ReasonDirtySession: a finished or deleted session still owns open windows.
	ReasonDirtySession = "dirty_session"
	// ReasonProfileMismatch: a window or action names another profile than the session's.
	ReasonProfileMismatch = "profile_mismatch"
	// ReasonWaitingForUser: automated writes while the session waits for the user.
	ReasonWaitingForUser = "waiting_for_user"
	// ReasonSessionFinished: the session is finished; nothing new opens in it.
	ReasonSessionFinished = "session_finished"
	// ReasonSpawnNotObserved: a Spawned window whose page the agent did not see
	// spawned from a page of the window's session (a forged or mistaken object);
	// the page is never touched.
	ReasonSpawnNotObserved = "spawn_not_observed"
	// ReasonPlacementNotPinned: a Tab placement page opened outside the session's
	// pinned window (the message names both windows and why, e.g. the CDP driver
	// owns no page of the session in the pinned window to open the tab from, and
	// CDP cannot name a new tab's window).
	ReasonPlacementNotPinned = "placement_not_pinned"
	// ReasonPinned: a Tab placement page opened in the session's pinned window.
	ReasonPinned = "Pinned"
	// ReasonTabInUse: a Bind window names a tab that another window already owns
	// or binds; a tab is bound by at most one window.
	ReasonTabInUse = "tab_in_use"

	// ReasonStaleCoordinates: a click by point whose observation is older than the
	// page's last scroll, navigation or re-render.
	ReasonStaleCoordinates = "stale_coordinates"
	// ReasonStaleRef: a ref from an observation of another document, page or
	// session, or one that no longer names a connected element; never retargeted.
	ReasonStaleRef = "stale_ref"
	// ReasonAmbiguousTarget: a click or type by text matching more than one
	// visible element; the refusal lists the candidates' refs.
	ReasonAmbiguousTarget = "ambiguous_target"
	// ReasonTargetNotFound: no visible element matches the target.
	ReasonTargetNotFound = "target_not_found"
	// ReasonNoHistory: a Back (Forward) step on a page with no earlier (later)
	// entry in its history; nothing was loaded.
	ReasonNoHistory = "no_history"
	// ReasonDialogOpen: a step on a page that shows a JavaScript dialog (alert,
	// confirm, prompt) its page opened; nothing ran. Answer it first with a
	// Dialog step ({type: Dialog, answer: Accept} or Dismiss). A dialog nobody
	// answers is dismissed (Cancel) 5 minutes after it opened.
	ReasonDialogOpen = "dialog_open"
	// ReasonNoDialog: a Dialog step on a page that shows no dialog (none was
	// opened, or it was answered or timed out); nothing ran.
	ReasonNoDialog = "no_dialog"
	// ReasonSessionOwnedByAnotherThread: an action from a thread that is not the session's.
	ReasonSessionOwnedByAnotherThread = "session_owned_by_another_thread"
	// ReasonFocusViolation: a step that would focus a window or tab, or switch
	// tabs (browser shortcuts such as Ctrl+T or Ctrl+Tab); ordinary operations
	// never focus.
	ReasonFocusViolation = "focus_violation"
	// ReasonNoKeepalive: a warning, not a refusal: the session has been driven
	// for more than 10 minutes on a host that ends idle connections, without
	// spec.keepalive.
	ReasonNoKeepalive = "no_keepalive"
	// ReasonWindowNotInSession: an action names a window that is not one of its
	// session's, or whose page the agent does not hold.
	ReasonWindowNotInSession = "window_not_in_session"
	// ReasonURLNotAllowed: an Open window or a navigate step names a
	// destination its profile's spec.urlPolicy refuses (by default every
	// private, loopback, link-local and unspecified address, and names that
	// resolve to one); the hint is the admin's patch of
	// spec.urlPolicy.allowedHosts.
	ReasonURLNotAllowed = "url_not_allowed"
	// ReasonPageGone: the window's page closed before or while the action ran.
	ReasonPageGone = "page_gone"
	// ReasonStepFailed: the browser could not run the step (timeout, navigation error).
	ReasonStepFailed = "step_failed"
	// ReasonScreenshotTooLarge: a Screenshot's image would be larger than
	// MaxScreenshotBytes even taken as small as tabwarden takes it (a PNG: as
	// is; a JPEG: down to quality 30 at a quarter of the scale); the hint
	// is a smaller call (JPEG, or one element).
	ReasonScreenshotTooLarge = "screenshot_too_large"
	// ReasonPageNotVisible: a Screenshot of a page the browser does not show
	// (a background tab, a minimized window): Chromium draws no picture of a
	// hidden page, and tabwarden never brings a tab to the front to make one.
	ReasonPageNotVisible = "page_not_visible"
	// ReasonUploadNotAllowed: an Upload names a file the profile does not let
	// sessions send: the profile has no spec.uploadDirectory, or the file is
	// not a regular file inside it (missing, a directory, a link out of it),
	// or the files are larger than MaxUploadBytes. The hint is the corrected
	// call (the files the directory offers) or the admin's patch.
	ReasonUploadNotAllowed = "upload_not_allowed"

	// ReasonRegistered: the object is registered.
	ReasonRegistered = "Registered"
	// ReasonNoProfile: no connected profile matches the session's selector, or the pinned one is missing.
	ReasonNoProfile = "NoProfile"
	// ReasonAcknowledged: every spawned window has a disposition.
	ReasonAcknowledged = "Acknowledged"
	// ReasonClean: the session owns no open page it should not.
	ReasonClean = "Clean"
	// ReasonActive: the session is active.
	ReasonActive = "Active"
	// ReasonCleaningUp: the session is closing its pages.
	ReasonCleaningUp = "CleaningUp"
	// ReasonIdleTimeout: the session saw no activity for spec.idleTimeout and finished.
	ReasonIdleTimeout = "IdleTimeout"
	// ReasonUserWaitTimeout: the session waited for its user (state
	// WaitingForUser) longer than spec.userWaitTimeout and finished.
	ReasonUserWaitTimeout = "UserWaitTimeout"
	// ReasonFinished: the session finished and every page it owned is closed, released or detached.
	ReasonFinished = "Finished"

	// ReasonOpening: the agent has not opened the page yet.
	ReasonOpening = "Opening"
	// ReasonOpen: the page is open.
	ReasonOpen = "Open"
	// ReasonOpenFailed: the browser refused to open the page.
	ReasonOpenFailed = "OpenFailed"
	// ReasonClosed: the page was closed by tabwarden.
	ReasonClosed = "Closed"
	// ReasonGone: the page was closed outside tabwarden (by the user or the page).
	ReasonGone = "Gone"
	// ReasonBrowserRestarted: the page went with its browser, which restarted
	// (`tabwarden up` launches a new Chromium each run): an Open window of a
	// live session opens its page again, at its last url; a Spawned or Bound
	// window ends Gone with this reason, as what it had cannot come back. Also
	// the reason of the Event that says so.
	ReasonBrowserRestarted = "BrowserRestarted"
	// ReasonBrowserUnreachable: the agent cannot reach the browser; the page's state is unknown.
	ReasonBrowserUnreachable = "BrowserUnreachable"
	// ReasonBoundTabGone: the bound user tab disappeared; the binding failed and nothing replaces it.
	ReasonBoundTabGone = "bound_tab_gone"
	// ReasonBoundTabNotFound: no tab with the bound id exists in the profile.
	ReasonBoundTabNotFound = "bound_tab_not_found"
	// ReasonBound: the window is bound to the user's tab.
	ReasonBound = "Bound"

	// ReasonAgentConnected: the agent reaches its browser.
	ReasonAgentConnected = "AgentConnected"
	// ReasonAgentDisconnected: the agent does not reach its browser.
	ReasonAgentDisconnected = "AgentDisconnected"
	// ReasonAgentLost: set by the controller (Connected=Unknown) when the
	// profile's heartbeat Lease was not renewed within the grace period; the
	// agent sets Connected=True again when it returns.
	ReasonAgentLost = "AgentLost"
)

// Profile liveness, as seen by a session.
const (
	// ProfileReachableCondition says whether the agent of the session's profile
	// is alive. False (reason profile_lost) while the controller holds the agent
	// lost: the session's pages are neither opened nor closed meanwhile, and a
	// selector session with no page yet is placed on another profile.
	ProfileReachableCondition = "ProfileReachable"
	// ReasonProfileLost: the agent of the session's profile stopped renewing its
	// heartbeat Lease; the session keeps its pages and converges when it returns.
	ReasonProfileLost = "profile_lost"
	// ReasonProfileReachable: the agent of the session's profile renews its Lease.
	ReasonProfileReachable = "ProfileReachable"
	// EventRescheduled: a selector session with no page moved off a lost profile.
	EventRescheduled = "Rescheduled"
)

// Abandonment: a session's holder is the client that drives it; it renews a
// coordination.k8s.io Lease named after the session, in its namespace, with the
// label SessionLabel, while it lives.
const (
	// HeldCondition says whether a session with spec.abandonAfter is held: True
	// (reason Held) while its holder renews its Lease, or while it waits for its
	// user; False (reason Abandoned) once the holder stopped renewing for
	// spec.abandonAfter, and the session ends (status.endReason Abandoned).
	HeldCondition = "Held"
	// ReasonHeld: the session's holder renews its Lease.
	ReasonHeld = "Held"
	// ReasonNotYetHeld: no client holds the session yet; it counts from its creation.
	ReasonNotYetHeld = "NotYetHeld"
	// ReasonAbandoned: the session's holder stopped renewing its Lease for
	// spec.abandonAfter (or nobody held it that long after its creation): the
	// session ends like a Finished one. Also its status.endReason and the
	// reason of the Warning Event that says so.
	ReasonAbandoned = "Abandoned"
)

// Event reasons recorded for things that happened.
const (
	EventSpawnAdopted   = "SpawnAdopted"
	EventPageClosed     = "PageClosed"
	EventPageReleased   = "PageReleased"
	EventTabDetached    = "TabDetached"
	EventPageGone       = "PageGone"
	EventSessionCleaned = "SessionCleaned"
	// EventActionRefused: a guard refused a BrowserAction (the Event's reason
	// field is ActionRefused; its message starts with the guard reason).
	EventActionRefused = "ActionRefused"
)

// Guards lists every guard reason of the contract's guard table (docs/contract.md), in its order. The
// guard coverage test classifies every step type against each one.
var Guards = []string{
	ReasonSessionUnregistered,
	ReasonUnacknowledgedSpawns,
	ReasonDirtySession,
	ReasonStaleCoordinates,
	ReasonAmbiguousTarget,
	ReasonProfileMismatch,
	ReasonNoKeepalive,
	ReasonWaitingForUser,
	ReasonSessionOwnedByAnotherThread,
	ReasonFocusViolation,
}

// Tenancy: which namespaces may use a profile (spec.namespaces, spec.namespaceSelector).
const (
	// AdmittedCondition says whether the session's profile admits the session's
	// namespace. False with reason profile_not_allowed on a session that is not
	// placed (Registered=False too), and on a placed session whose profile stopped
	// admitting its namespace: a placed session is not evicted, it keeps its
	// profile until it ends, so that its pages stay owned and are cleaned up.
	AdmittedCondition = "Admitted"
	// ReasonProfileNotAllowed: the session's profile does not admit its namespace
	// (neither listed in spec.namespaces nor matched by spec.namespaceSelector); the
	// hint is the admin's kubectl patch that admits it, or another profile to pin.
	ReasonProfileNotAllowed = "profile_not_allowed"
	// ReasonAdmitted: the session's profile admits its namespace.
	ReasonAdmitted = "Admitted"
)
