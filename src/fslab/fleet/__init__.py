"""`fslab fleet`: the same campaign on many hosts through ansible-playbook."""
