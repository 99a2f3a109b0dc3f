package controllers

// The controller role's permissions, generated into config/rbac/controller_role.yaml
// by `make manifests` (ClusterRole tabwarden-controller, bound to the ServiceAccount
// tabwarden-controller in a cluster, and to the certificate group
// tabwarden:controllers by internal/testenv and `tabwarden up`). Least privilege:
// the controller never creates windows (users and agents do), never writes a
// BrowserProfile other than its liveness (agents and administrators do) and writes
// no Lease but its leader election one, in its own namespace; it reads the
// agents' heartbeat Leases there and the sessions' holder Leases. What it may write
// is narrowed further by the admission policies in config/admission.

// Sessions: placement, status, and the tabwarden.dev/cleanup finalizer.
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browsersessions,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browsersessions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browsersessions/finalizers,verbs=update

// Windows: registration (labels, owner reference), refusals in status, and
// deletion of an ended session's windows (their agent's finalizer closes the pages).
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browserwindows,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browserwindows/status,verbs=get;update;patch

// Profiles are read for placement; namespaces for the profiles' tenancy. The
// controller owns liveness: it sets a profile's Connected condition to Unknown
// when its agent's Lease goes unrenewed (config/admission/profile.yaml keeps it
// to that status change).
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browserprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browserprofiles/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Tab lists: the controller decides where they exist (creates them empty in a
// namespace with a session placed on the profile, deletes them when none
// remains); the profile's agent fills them in.
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browsertablists,verbs=get;list;watch;create;delete

// Events on sessions and windows, in their namespaces.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Abandonment: the holder Leases of sessions (named after the session, in its
// namespace, labelled tabwarden.dev/session), read only: the session's driver
// (tabwarden-edit in its namespace) writes them, the controller judges them.
// Its cache holds only the labelled ones.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch

// Leader election: the Lease controller.tabwarden.dev and its events (the core
// API), in the controller's namespace only; there it also reads (list, watch)
// the agents' heartbeat Leases, tabwarden-profile-<profile>.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=tabwarden-system,roleName=tabwarden-leader-election,resources=leases,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",namespace=tabwarden-system,roleName=tabwarden-leader-election,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browseractions,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browseractions/status,verbs=get;update;patch

// Screenshots: collected when their action is gone (the garbage collector does
// it too, where there is one) or when an agent of another profile than the
// action's wrote them; watched as metadata only (no image in the cache).
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browserscreenshots,verbs=get;list;watch;delete

// Metrics served with --metrics-secure: the API server authenticates and
// authorizes each scrape (controller-runtime's filters.WithAuthenticationAndAuthorization).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
