from fslab.analyze.campaign.metrics_catalog import format_value


def test_values_carry_their_units():
    assert format_value("fio.write.iops", 27_100) == "27.1K"
    assert format_value("fio.write.iops", 1601) == "1601"
    assert format_value("dd.bw_bytes_s", 43_800_000) == "43.8MB/s"
    assert format_value("dd.bw_bytes_s", 602_000) == "602kB/s"
    assert format_value("dd.bw_bytes_s", 2_344_400_000) == "2.34GB/s"
    assert format_value("fio.sync.lat_ns_p99", 1_954_550_000) == "1.95s"
    assert format_value("fio.sync.lat_ns_p99", 3_620_000) == "3.62ms"
    assert format_value("fio.sync.lat_ns_p99", 45_000) == "45us"
    assert format_value(None, None) == "-"
