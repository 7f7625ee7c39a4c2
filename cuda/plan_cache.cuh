/* A small fixed-size hash map from a plain-data key (compared bytewise: zero it
 * with memset before filling, so padding compares equal) to a plan: the
 * library descriptors and algorithm chosen for one problem shape, so the steady
 * state builds no descriptor and asks no heuristic. Open addressing with linear
 * probing; when it is three quarters full every plan is destroyed and it
 * starts over (a program that cycles through that many shapes pays for the
 * rebuild, nothing else does). Guarded by a mutex: ops may run on several
 * host threads (one per GPU). */
#pragma once

#include <mutex>
#include <string.h>

template <typename K, typename V, int CAP = 1024>
class nn_plan_cache {
  public:
    typedef void (*destroy_fn)(V &);
    explicit nn_plan_cache(destroy_fn d) : destroy_(d) {}

    /* The plan for key, or NULL. The pointer stays valid until the next insert. */
    V *find(const K &key)
    {
        std::lock_guard<std::mutex> g(lock_);
        for (unsigned i = hash(key) % CAP, probes = 0; probes < CAP; i = (i + 1) % CAP, probes++) {
            if (!used_[i]) return NULL;
            if (!memcmp(&keys_[i], &key, sizeof key)) return &vals_[i];
        }
        return NULL;
    }

    /* Store a plan (taking ownership of its descriptors); returns where it lives. */
    V *insert(const K &key, V val)
    {
        std::lock_guard<std::mutex> g(lock_);
        if (count_ * 4 >= CAP * 3) {
            for (int i = 0; i < CAP; i++)
                if (used_[i]) destroy_(vals_[i]), used_[i] = false;
            count_ = 0;
        }
        unsigned i = hash(key) % CAP;
        while (used_[i]) {
            if (!memcmp(&keys_[i], &key, sizeof key)) { /* a racing thread built it first: keep that one */
                destroy_(val);
                return &vals_[i];
            }
            i = (i + 1) % CAP;
        }
        used_[i] = true;
        keys_[i] = key;
        vals_[i] = val;
        count_++;
        return &vals_[i];
    }

  private:
    static unsigned hash(const K &key)
    {
        const unsigned char *p = (const unsigned char *)&key;
        unsigned h = 2166136261u;
        for (size_t i = 0; i < sizeof key; i++) h = (h ^ p[i]) * 16777619u;
        return h;
    }
    std::mutex lock_;
    destroy_fn destroy_;
    K keys_[CAP];
    V vals_[CAP];
    bool used_[CAP] = {};
    int count_ = 0;
};

/* The process-wide cache of one plan type, made on first use; never freed (it lives to exit). */
template <typename K, typename V> nn_plan_cache<K, V> *nn_plan_cache_for(void (*destroy)(V &))
{
    static nn_plan_cache<K, V> *c = new nn_plan_cache<K, V>(destroy);
    return c;
}
