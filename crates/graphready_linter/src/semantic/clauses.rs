//! The clauses of an `if` statement: what each binds is undone before the next clause, and what
//! holds after the statement is what the clauses that can run bound.

use super::model::{Binding, SemanticModel};
use super::types::Ty;

impl<'a> SemanticModel<'a> {
    /// Narrows a name in the clause being visited (`if isinstance(x, (int, float)):`): bound
    /// like an assignment there, but not what the name holds after the statement, unless the
    /// clause binds it again.
    pub fn narrow(&mut self, name: &'a str, ty: Ty) {
        self.bind(name, ty);
        self.narrowed.push((self.branches.len(), name, ty));
    }

    /// Starts an `if` statement with several clauses (see [`Self::enter_branch`]).
    pub fn begin_clauses(&mut self) {
        self.clause_results.push(Vec::new());
    }

    /// Ends the statement: what the clauses bound holds after it, the later clause's value
    /// winning (as when the clauses are read in order), but a name names the host's device
    /// only if every clause binding it binds the host's (`device = torch.device("cuda")` in
    /// one clause and `"cpu"` in the other may be either).
    pub fn end_clauses(&mut self) {
        let results = self.clause_results.pop().unwrap_or_default();
        let everywhere = |name: &str| {
            results
                .iter()
                .filter(|(bound, _, _)| *bound == name)
                .all(|(_, _, host_device)| *host_device)
        };
        for &(name, ref binding, host_device) in &results {
            match binding.clone() {
                Binding::Value(ty) => {
                    self.bind(name, ty);
                    if host_device && everywhere(name) {
                        self.current().host_devices.insert(name);
                    }
                }
                import @ Binding::Import(_) => {
                    self.invalidate();
                    self.current().bindings.insert(name, import);
                }
            }
        }
    }

    /// Starts one clause of an `if` statement: what it binds is undone before the next clause,
    /// which runs only when this one does not.
    pub fn enter_branch(&mut self) {
        self.branches.push((self.scopes.len(), Vec::new()));
    }

    /// Ends a clause: undoes its bindings and, with `keep`, keeps their final values for
    /// [`Self::end_clauses`] (a clause that does not run under the defaults binds nothing the
    /// code after the statement sees).
    pub fn leave_branch(&mut self, keep: bool) {
        let open = self.branches.len();
        let Some((depth, undo)) = self.branches.pop() else {
            return;
        };
        self.invalidate();
        let mut narrowed = Vec::new();
        while let Some(&(level, name, ty)) = self.narrowed.last() {
            if level < open {
                break;
            }
            narrowed.push((name, ty));
            self.narrowed.pop();
        }
        let mut made: Vec<(&'a str, Binding, bool)> = Vec::new();
        let Some(scope) = self.scopes.get_mut(depth.wrapping_sub(1)) else {
            return;
        };
        // Newest first: the first value undone for a name is its final one.
        for (name, replaced, host_device, parameter) in undo.into_iter().rev() {
            let was_host_device = scope.host_devices.contains(name);
            if host_device {
                scope.host_devices.insert(name);
            } else {
                scope.host_devices.remove(name);
            }
            // A parameter the clause bound again is the parameter as received after it, unless
            // the clause's binding is kept (which binds the name again).
            if parameter {
                scope.parameters.insert(name);
            }
            let now = match replaced {
                Some(binding) => scope.bindings.insert(name, binding),
                None => scope.bindings.remove(name),
            };
            if let Some(now) = now {
                let narrowing = matches!(now, Binding::Value(ty)
                    if narrowed.iter().any(|&(n, narrowed)| n == name && narrowed == ty));
                if !narrowing && !made.iter().any(|(n, _, _)| *n == name) {
                    made.push((name, now, was_host_device));
                }
            }
        }
        made.reverse();
        if !keep {
            return;
        }
        if let Some(results) = self.clause_results.last_mut() {
            results.extend(made);
        }
    }
}
