"""Empty stand-in for torch_npu: msprobe imports it in MSAdapter mode (its NPU API list), and on the
CPU there is none. On PYTHONPATH only while make_mindtorch.sh dumps the models."""
