package agent

// The agent role's permissions, generated into config/rbac/agent_role.yaml by
// `make manifests` (ClusterRole tabwarden-agent, bound to the ServiceAccount
// tabwarden-agent in a cluster, and to the certificate group tabwarden:agents by
// internal/testenv and `tabwarden up`). RBAC cannot say "only this profile's":
// the admission policies in config/admission narrow every write below to the
// agent's own profile, as the node authorizer and NodeRestriction do for a kubelet.

// Windows: the agent creates only Spawned windows (adoptions, labelled with its
// profile), writes their status and its page finalizer, and never deletes one
// (the controller and users do; the finalizer is how the agent takes part).
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browserwindows,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browserwindows/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browserwindows/finalizers,verbs=update

// Sessions are read only (status.profileName, state, placement). The finalizers
// "subresource" grants no write (custom resources serve none): it is what the
// OwnerReferencesPermissionEnforcement admission plugin, where enabled, asks of
// whoever sets blockOwnerDeletion in an owner reference to a session, as the
// agent does when it adopts a spawned page into its session.
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browsersessions,verbs=get;list;watch
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browsersessions/finalizers,verbs=update

// Profiles: the agent registers its own profile and publishes its status; the
// admission policies keep it to the profile named after it and off spec.
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browserprofiles,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browserprofiles/status,verbs=get;update;patch

// Tab lists: the controller creates one (named after the profile) in each
// namespace with a session placed on the profile and deletes it when none
// remains; the agent fills in the tabs that namespace may bind (listed
// cluster-wide to resync). It never creates or deletes one: the admission policy
// keeps it to updating its own profile's lists.
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browsertablists,verbs=get;list;patch

// Events on windows and sessions, in their namespaces.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// The profile's heartbeat Lease (tabwarden-profile-<profile>, read with the API
// reader: no list or watch), in the lease namespace only; the admission policy
// keeps each agent to its own Lease.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=tabwarden-system,roleName=tabwarden-agent-lease,resources=leases,verbs=get;create;update;patch
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browseractions,verbs=get;list;watch
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browseractions/status,verbs=get;update;patch

// Screenshots: the agent creates the image of a Screenshot step, in the action's
// namespace, owned by the action (config/admission/screenshot.yaml keeps it to its
// own profile's); it never reads, lists or deletes them.
// +kubebuilder:rbac:groups=tabwarden.dev,resources=browserscreenshots,verbs=create

// Metrics served with --metrics-secure: the API server authenticates and
// authorizes each scrape (controller-runtime's filters.WithAuthenticationAndAuthorization).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
