//! What a test does to the fake API server's behaviour, beside its objects: hold lists, and revoke or
//! grant back RBAC permissions.

impl super::FakeApiServer {
    /// Lists of `plural` wait until [`release_lists`](Self::release_lists).
    pub fn hold_lists(&self, plural: &str) {
        self.shared.inner.lock().unwrap().held.insert(plural.to_string());
    }

    /// Revokes every grant on `plural` (and its subresources), in every group: each request for it is
    /// refused with 403 Forbidden, as a ClusterRole without it would.
    pub fn forbid(&self, plural: &str) {
        let mut inner = self.shared.inner.lock().unwrap();
        let on_plural: Vec<_> = inner
            .rbac
            .grants()
            .into_iter()
            .filter(|g| g.1 == plural || g.1.starts_with(&format!("{plural}/")))
            .collect();
        inner.rbac.revoked.extend(on_plural);
    }

    /// Revokes one grant: `verb` on `resource` (or `resource/subresource`) of `group`.
    pub fn revoke(&self, group: &str, resource: &str, verb: &str) {
        let grant = (group.to_string(), resource.to_string(), verb.to_string());
        self.shared.inner.lock().unwrap().rbac.revoked.insert(grant);
    }

    /// Grants back everything revoked on `plural` (the permission granted again).
    pub fn permit(&self, plural: &str) {
        let mut inner = self.shared.inner.lock().unwrap();
        inner
            .rbac
            .revoked
            .retain(|g| g.1 != plural && !g.1.starts_with(&format!("{plural}/")));
    }

    /// Refusals of grants no test revoked, taken (so the server's drop does not fail the test for them).
    pub fn take_unexpected(&self) -> Vec<String> {
        std::mem::take(&mut self.shared.inner.lock().unwrap().rbac.unexpected)
    }

    /// The grants `deploy/10-rbac.yaml` makes pier's ServiceAccount.
    pub fn grants(&self) -> std::collections::BTreeSet<super::rbac::Grant> {
        self.shared.inner.lock().unwrap().rbac.grants()
    }

    pub fn release_lists(&self, plural: &str) {
        self.shared.inner.lock().unwrap().held.remove(plural);
    }
}
