from fslab.base.hostfacts import (
    collect_host_facts,
    ext4_free_clusters_watermark,
    parse_cpu_list,
    percpu_counter_batch,
)


def test_cpu_list_parsing():
    assert parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpu_list("0") == [0]


def test_watermark_matches_the_second_report():
    # 1728 cores: batch = max(32, 2*1728) = 3456; watermark = 4 * 3456 * 1728 clusters
    assert percpu_counter_batch(1728) == 3456
    assert ext4_free_clusters_watermark(1728, 1728) == 4 * 3456 * 1728
    # a 2-CPU VM: batch 32
    assert ext4_free_clusters_watermark(2, 2) == 256


def test_host_facts_are_collected():
    facts = collect_host_facts()
    assert facts.online_cpus >= 1 and facts.nr_cpu_ids >= facts.online_cpus
    assert facts.kernel_release
    assert facts.ext4_watermark_clusters == ext4_free_clusters_watermark(
        facts.online_cpus, facts.nr_cpu_ids
    )
